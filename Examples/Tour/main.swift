// The Sluice examples tour: `swift run sluice-tour`.
import SluiceExamples

for line in await runTour() {
  print(line)
}
