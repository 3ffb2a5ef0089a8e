import Sluice
import SluiceTesting

/// A view model with `@Published` properties, observed property by property and as a whole.
@Sendable func publishedTour() async -> [String] {
  final class Thermostat: ObservableObject {
    @Published var target = 20
    @Published var mode = "heat"
  }

  let thermostat = Thermostat()
  var lines: [String] = []
  var cancellables = Set<AnyCancellable>()
  thermostat.objectWillChange
    .sink { lines.append("objectWillChange (target is still \(thermostat.target))") }
    .store(in: &cancellables)
  thermostat.$target
    .sink { lines.append("$target: \($0)") }
    .store(in: &cancellables)
  thermostat.target = 22
  thermostat.mode = "cool"

  // assign(to:) feeds a published property from another publisher.
  [23, 24].publisher.assign(to: &thermostat.$target)
  lines.append("after assign(to:), target is \(thermostat.target), mode is \(thermostat.mode)")
  return lines
}
