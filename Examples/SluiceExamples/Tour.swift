/// One section of the examples tour: a title and a pipeline that reports what it produced.
public struct TourSection: Sendable {
  public let title: String
  public let run: @Sendable () async -> [String]
}

/// Every section of the tour, in the order `sluice-tour` prints them.
public let tour: [TourSection] = [
  TourSection(title: "Just and Sequence.publisher, demand by demand", run: demandTour),
  TourSection(title: "Subjects: each subscriber at its own pace", run: subjectsTour),
  TourSection(title: "Future and AsyncFuture, awaited from a task", run: futureTour),
  TourSection(title: "@Published and ObservableObject", run: publishedTour),
  TourSection(title: "Schedulers: virtual time and a dispatch queue", run: schedulersTour),
  TourSection(
    title: "Record, and the rule checker catching a misbehaving publisher", run: rulesTour),
  TourSection(title: "Operators: mapping", run: mappingTour),
  TourSection(title: "Operators: filtering", run: filteringTour),
  TourSection(title: "Operators: reducing, mathematics, matching", run: reducingTour),
  TourSection(title: "Operators: picking by position", run: sequenceTour),
  TourSection(title: "Operators: errors, side effects, coding", run: errorsTour),
  TourSection(title: "Operators: time, switching, merging", run: combiningTour),
  TourSection(title: "Operators: buffering, grouping by time, subscribe(on:)", run: bufferingTour),
  TourSection(title: "Operators: multicasting", run: multicastingTour),
  TourSection(title: "Foundation publishers: Timer, NotificationCenter", run: foundationTour),
  TourSection(title: "Marble diagrams: time and combining operators", run: marblesTour),
  TourSection(title: "Bridges: publishers and async/await", run: bridgesTour),
  TourSection(title: "Actors and pipelines", run: actorsTour),
  TourSection(title: "An app: search as you type on the main actor") {
    await searchAppTour()
  },
]

/// Runs every section and returns the tour's full output, section by section.
public func runTour() async -> [String] {
  var output: [String] = []
  for section in tour {
    output.append("== \(section.title)")
    output += await section.run()
  }
  return output
}
