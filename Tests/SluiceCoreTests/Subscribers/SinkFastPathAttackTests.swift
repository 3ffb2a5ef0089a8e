import Dispatch
import Foundation
import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Testing

/// Adversarial tests of the sink fast paths: a single-value publisher (`Just`,
/// `Optional.Publisher`, `Result.Publisher`) feeding a sink without a subscription object, and
/// `AnyPublisher` handing a sink to the wrapped publisher as itself.
@Suite("Sink fast path attacks", .onThreadsOfTheirOwn)
struct SinkFastPathAttackTests {
  // MARK: helpers

  typealias Attachment = SinkAttachment

  /// A publisher that records what it sees of its subscriber, then passes it on to `upstream`
  /// (as an app's logging or instrumenting wrapper does).
  final class Spy<Upstream: Publisher>: Publisher, @unchecked Sendable {
    typealias Output = Upstream.Output
    typealias Failure = Upstream.Failure
    struct Seen: Equatable {
      var typeName: String
      var description: String
      var identifier: CombineIdentifier
      var mirrorChildren: Int
      var isCancellable: Bool
      var isAnySubscriber: Bool
    }
    let upstream: Upstream
    let seen = Box<[Seen]>([])
    init(_ upstream: Upstream) { self.upstream = upstream }

    func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
      let entry = Seen(
        typeName: String(describing: S.self),
        description: String(describing: subscriber),
        identifier: subscriber.combineIdentifier,
        mirrorChildren: Mirror(reflecting: subscriber).children.count,
        isCancellable: subscriber is any Cancellable,
        isAnySubscriber: subscriber is AnySubscriber<Output, Failure>)
      seen.update { $0?.append(entry) }
      upstream.receive(subscriber: subscriber)
    }
  }

  /// A text stream collecting lines (a struct: `print(to:)` copies it).
  struct Lines: TextOutputStream {
    let box = Box<String>("")
    mutating func write(_ string: String) { box.update { $0?.append(string) } }
    var lines: [String] {
      (box.value ?? "").split(separator: "\n").map(String.init)
    }
  }

  // MARK: what the wrapped publisher sees

  @Test("AnyPublisher: a bare sink is seen by the wrapped publisher as the Sink (as in Combine)")
  func wrappedPublisherSeesABareSink() {
    let spy = Spy(Just(1))
    let events = Box<[String]>([])
    let (sink, _) = recordingSink(into: events)
    spy.eraseToAnyPublisher().subscribe(sink)
    let seen = spy.seen.value?.first
    #expect(seen?.identifier == sink.combineIdentifier)
    #expect(seen?.description == "Sink")
    #expect(seen?.mirrorChildren == 0)
    #expect(events.value == ["1", "finished"])
  }

  @Test("AnyPublisher: an AnySubscriber(sink) the app passes reaches the wrapped publisher as is")
  func wrappedPublisherSeesTheAnySubscriberItWasGiven() {
    // Combine's AnyPublisher.receive(subscriber:) hands the wrapped publisher the subscriber it
    // was given, whatever its type (and so did this package before 580d294, which wrapped it in
    // an AnySubscriber — not nesting). Unerased, the spy sees the AnySubscriber.
    let events = Box<[String]>([])
    let (sink, _) = recordingSink(into: events)
    let erasedSpy = Spy(Just(1))
    erasedSpy.eraseToAnyPublisher().subscribe(AnySubscriber(sink))
    let unerasedSpy = Spy(Just(1))
    let (sink2, _) = recordingSink(into: Box<[String]>([]))
    unerasedSpy.subscribe(AnySubscriber(sink2))
    let erased = erasedSpy.seen.value?.first
    let unerased = unerasedSpy.seen.value?.first
    #expect(unerased?.isAnySubscriber == true && unerased?.isCancellable == false)
    #expect(erased?.isAnySubscriber == true, "erased: \(String(describing: erased))")
    #expect(erased?.isCancellable == false, "erased: \(String(describing: erased))")
    #expect(erased?.typeName == unerased?.typeName)
    #expect(erased?.identifier == sink.combineIdentifier)
    #expect(erased?.description == "Sink")
    #expect(events.value == ["1", "finished"])
  }

  @Test("TestPublisher behind erasure: descriptions and demand of sink and AnySubscriber(sink)")
  func erasedTestPublisherDescriptionsAndDemand() {
    for attachment in Attachment.allCases {
      let upstream = TestPublisher<Int, TestError>()
      let events = Box<[String]>([])
      let (sink, tracker) = recordingSink(into: events, failure: TestError.self)
      attachment.attach(sink, to: upstream)
      #expect(upstream.subscriberDescriptions == ["Sink"], "\(attachment)")
      #expect(upstream.subscriptions.first?.requests == [.unlimited], "\(attachment)")
      upstream.send(1)
      sink.cancel()
      upstream.send(2)
      #expect(events.value == ["1"], "\(attachment)")
      #expect(upstream.subscriptions.first?.cancelCount == 1, "\(attachment)")
      #expect(tracker.object == nil, "\(attachment): closures released")
    }
  }

  // MARK: a sink and several publishers

  @Test("a subscribed sink ignores Just/Optional/Result, every attachment; keeps its upstream")
  func subscribedSinkIgnoresSingleValues() {
    for attachment in Attachment.allCases {
      let upstream = TestPublisher<Int, Never>()
      let events = Box<[String]>([])
      let (sink, _) = recordingSink(into: events)
      upstream.subscribe(sink)
      attachment.attach(sink, to: Just(10))
      attachment.attach(sink, to: Optional(11).publisher)
      attachment.attach(sink, to: Result<Int, Never>.success(12).publisher)
      #expect(events.value == [], "\(attachment)")
      #expect(upstream.subscriptions.first?.cancelCount == 0, "\(attachment)")
      upstream.send(1)
      upstream.send(completion: .finished)
      #expect(events.value == ["1", "finished"], "\(attachment)")
    }
  }

  @Test("Just first, then other publishers: they are cancelled, nothing more arrives")
  func justFirstThenOthers() {
    for attachment in Attachment.allCases {
      let events = Box<[String]>([])
      let (sink, tracker) = recordingSink(into: events)
      attachment.attach(sink, to: Just(1))
      let upstream = TestPublisher<Int, Never>()
      attachment.attach(sink, to: upstream)
      #expect(upstream.subscriptions.first?.cancelCount == 1, "\(attachment)")
      #expect(upstream.subscriptions.first?.requests == [], "\(attachment)")
      let subject = PassthroughSubject<Int, Never>()
      attachment.attach(sink, to: subject)
      subject.send(5)
      attachment.attach(sink, to: [7, 8].publisher)
      attachment.attach(sink, to: Optional<Int>.none.publisher)
      #expect(events.value == ["1", "finished"], "\(attachment)")
      #expect(tracker.object == nil, "\(attachment)")
    }
  }

  @Test("a sink that completed through Optional.none / Empty / Result.failure ignores Just")
  func completedByOtherMeansThenJust() {
    for attachment in Attachment.allCases {
      let events = Box<[String]>([])
      let (a, _) = recordingSink(into: events)
      attachment.attach(a, to: Optional<Int>.none.publisher)
      attachment.attach(a, to: Just(1))
      let (b, _) = recordingSink(into: events, failure: TestError.self)
      attachment.attach(b, to: Result<Int, TestError>.failure(TestError()).publisher)
      attachment.attach(b, to: Result<Int, TestError>.success(2).publisher)
      let (c, _) = recordingSink(into: events)
      attachment.attach(c, to: Empty<Int, Never>())
      attachment.attach(c, to: Just(3))
      #expect(events.value == ["finished", "failure(TestError(1))", "finished"], "\(attachment)")
    }
  }

  @Test("a sink fed values before any subscription still takes Just as its one subscription")
  func valuesBeforeSubscriptionThenJust() {
    for attachment in Attachment.allCases {
      let events = Box<[String]>([])
      let (sink, _) = recordingSink(into: events)
      _ = sink.receive(0)  // a misbehaving publisher: Combine's sink passes it on
      attachment.attach(sink, to: Just(1))
      let late = TestSubscription()
      sink.receive(subscription: late)
      #expect(events.value == ["0", "1", "finished"], "\(attachment)")
      #expect(late.cancelCount == 1 && late.requests.isEmpty, "\(attachment)")
    }
  }

  // MARK: re-entrancy

  @Test("Just into another sink from inside a sink's receiveValue: nested order")
  func nestedJustIntoOtherSinks() {
    for attachment in Attachment.allCases {
      let events = Box<[String]>([])
      let depth = 20
      // sink k's receiveValue attaches sink k+1 to Just(k+1).
      var sinks: [Subscribers.Sink<Int, Never>] = []
      var trackers: [WeakReference<Tracker>] = []
      let holder = Box<[Subscribers.Sink<Int, Never>]>([])
      for k in 0..<depth {
        let (sink, tracker) = recordingSink(
          "s\(k):", into: events,
          onValue: { _ in
            guard k + 1 < depth, let next = holder.value?[k + 1] else { return }
            attachment.attach(next, to: Just(k + 1))
          })
        sinks.append(sink)
        trackers.append(tracker)
      }
      holder.set(sinks)
      attachment.attach(sinks[0], to: Just(0))
      let expected =
        (0..<depth).map { "s\($0):\($0)" } + (0..<depth).reversed().map { "s\($0):finished" }
      #expect(events.value == expected, "\(attachment)")
      holder.update { $0 = nil }
      sinks = []
      #expect(trackers.allSatisfy { $0.object == nil }, "\(attachment)")
    }
  }

  @Test("receiveValue re-attaching its own sink to Just, a subject and a TestPublisher")
  func reattachingFromReceiveValue() {
    for attachment in Attachment.allCases {
      let events = Box<[String]>([])
      let holder = Box<Subscribers.Sink<Int, Never>>()
      let upstream = TestPublisher<Int, Never>()
      let subject = PassthroughSubject<Int, Never>()
      let (sink, tracker) = recordingSink(
        into: events,
        onValue: { value in
          guard value == 1, let sink = holder.value else { return }
          attachment.attach(sink, to: Just(2))
          attachment.attach(sink, to: upstream)
          attachment.attach(sink, to: subject)
          subject.send(3)
          upstream.send(4)
        })
      holder.set(sink)
      attachment.attach(sink, to: Just(1))
      holder.update { $0 = nil }
      #expect(events.value == ["1", "finished"], "\(attachment)")
      #expect(upstream.subscriptions.first?.cancelCount == 1, "\(attachment)")
      #expect(upstream.subscriptions.first?.requests == [], "\(attachment)")
      #expect(tracker.object == nil, "\(attachment)")
    }
  }

  @Test("receiveValue cancelling, then re-attaching; receiveCompletion re-attaching")
  func cancelThenReattach() {
    for attachment in Attachment.allCases {
      let events = Box<[String]>([])
      let holder = Box<Subscribers.Sink<Int, Never>>()
      let (sink, tracker) = recordingSink(
        into: events,
        onValue: { _ in
          holder.value?.cancel()
          if let sink = holder.value { attachment.attach(sink, to: Just(2)) }
        })
      holder.set(sink)
      attachment.attach(sink, to: Just(1))
      holder.update { $0 = nil }
      #expect(events.value == ["1"], "\(attachment)")
      #expect(tracker.object == nil, "\(attachment)")

      let events2 = Box<[String]>([])
      let holder2 = Box<Subscribers.Sink<Int, Never>>()
      let (sink2, tracker2) = recordingSink(
        into: events2,
        onCompletion: { _ in
          if let sink = holder2.value { attachment.attach(sink, to: Just(2)) }
        })
      holder2.set(sink2)
      attachment.attach(sink2, to: Just(1))
      holder2.update { $0 = nil }
      #expect(events2.value == ["1", "finished"], "\(attachment)")
      #expect(tracker2.object == nil, "\(attachment)")
    }
  }

  @Test("receiveValue driving its own sink by hand: a value, a completion, a subscription")
  func drivingTheSinkFromReceiveValue() {
    for attachment in Attachment.allCases {
      let events = Box<[String]>([])
      let holder = Box<Subscribers.Sink<Int, Never>>()
      let extra = TestSubscription()
      let (sink, tracker) = recordingSink(
        into: events,
        onValue: { value in
          guard value == 1, let sink = holder.value else { return }
          _ = sink.receive(99)
          sink.receive(subscription: extra)
          sink.receive(completion: .finished)
          _ = sink.receive(100)
        })
      holder.set(sink)
      attachment.attach(sink, to: Just(1))
      holder.update { $0 = nil }
      #expect(events.value == ["1", "99", "finished"], "\(attachment)")
      #expect(extra.cancelCount == 1 && extra.requests.isEmpty, "\(attachment)")
      #expect(tracker.object == nil, "\(attachment)")
    }
  }

  @Test("Result.Publisher success: receiveValue failing its own sink by hand")
  func resultFailingFromReceiveValue() {
    for attachment in Attachment.allCases {
      let events = Box<[String]>([])
      let holder = Box<Subscribers.Sink<Int, TestError>>()
      let (sink, tracker) = recordingSink(
        into: events, failure: TestError.self,
        onValue: { _ in holder.value?.receive(completion: .failure(TestError(code: 2))) })
      holder.set(sink)
      attachment.attach(sink, to: Result<Int, TestError>.success(1).publisher)
      holder.update { $0 = nil }
      #expect(events.value == ["1", "failure(TestError(2))"], "\(attachment)")
      #expect(tracker.object == nil, "\(attachment)")
    }
  }

  // MARK: cancel from another thread during delivery

  @Test("cancel() from another thread while receiveValue runs: returns, no completion, released")
  func cancelDuringDeliveryFromAnotherThread() {
    for attachment in Attachment.allCases {
      for kind in 0..<3 {
        let events = Box<[String]>([])
        let entered = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let (sink, tracker) = recordingSink(
          into: events,
          onValue: { _ in
            entered.signal()
            proceed.wait()
          })
        let shared = Shared(sink)
        Thread.detachNewThread {
          switch kind {
          case 0: attachment.attach(shared.value, to: Just(1))
          case 1: attachment.attach(shared.value, to: Optional(1).publisher)
          default: attachment.attach(shared.value, to: Result<Int, Never>.success(1).publisher)
          }
          done.signal()
        }
        entered.wait()
        attachment.attach(sink, to: Just(2))  // must return at once, delivering nothing
        #expect(events.value == ["1"], "\(attachment) \(kind): nothing from a second Just")
        sink.cancel()  // must return while the value is in flight
        sink.cancel()
        #expect(tracker.object != nil, "\(attachment) \(kind): receiveValue still running")
        proceed.signal()
        done.wait()
        #expect(events.value == ["1"], "\(attachment) \(kind)")
        attachment.attach(sink, to: Just(2))
        #expect(events.value == ["1"], "\(attachment) \(kind)")
        #expect(tracker.object == nil, "\(attachment) \(kind): released after the delivery")
      }
    }
  }

  @Test("the same sink attached to Just on two threads: one value, one completion")
  func sameSinkTwoThreads() async {
    for round in 0..<300 {
      let attachment = Attachment.allCases[round % Attachment.allCases.count]
      let events = Box<[String]>([])
      let (sink, tracker) = recordingSink(into: events)
      let shared = Shared(sink)
      await simultaneously(
        { attachment.attach(shared.value, to: Just(1)) },
        { attachment.attach(shared.value, to: Just(2)) })
      let seen = events.value ?? []
      #expect(seen == ["1", "finished"] || seen == ["2", "finished"], "\(attachment): \(seen)")
      #expect(tracker.object == nil)
    }
  }

  @Test("Just racing an erased subject for the same sink: one of them wins, consistently")
  func justRacingSubject() async {
    for round in 0..<300 {
      let attachment = Attachment.allCases[round % Attachment.allCases.count]
      let events = Box<[String]>([])
      let (sink, tracker) = recordingSink(into: events)
      let subject = PassthroughSubject<Int, Never>()
      let shared = Shared(sink)
      await simultaneously(
        { attachment.attach(shared.value, to: Just(1)) },
        {
          attachment.attach(shared.value, to: subject)
          subject.send(2)
        })
      subject.send(3)
      let seen = events.value ?? []
      let subjectWon = seen == ["2", "3"] || seen == ["3"]
      #expect(seen == ["1", "finished"] || subjectWon, "\(attachment): \(seen)")
      sink.cancel()
      subject.send(4)
      #expect(events.value == seen)
      #expect(tracker.object == nil, "\(attachment): \(seen)")
    }
  }

  @Test("erased subject: sends racing the sink's cancel(); nothing after cancel returns")
  func erasedSubjectSendRacingCancel() async {
    for round in 0..<300 {
      let attachment = Attachment.allCases[round % 4 + 1]  // the erased / AnySubscriber ones
      let subject = PassthroughSubject<Int, Never>()
      let events = Box<[String]>([])
      let (sink, tracker) = recordingSink(into: events)
      attachment.attach(sink, to: subject)
      let cancelled = Box<Int>()
      let shared = Shared(sink)
      await simultaneously(
        {
          for value in 0..<50 { subject.send(value) }
        },
        {
          shared.value.cancel()
          cancelled.set(events.value?.count ?? 0)
        })
      let count = events.value?.count ?? 0
      #expect(count <= (cancelled.value ?? 0) + 1, "\(attachment): at most one in flight")
      #expect(tracker.object == nil, "\(attachment)")
    }
  }

  // MARK: erased pipelines against unerased ones

  /// Runs `make` with every attachment and returns the events of each.
  static func eventsByAttachment(
    _ run: (Attachment, Subscribers.Sink<Int, Never>) -> Void
  ) -> [String: [String]] {
    var result: [String: [String]] = [:]
    for attachment in Attachment.allCases {
      let events = Box<[String]>([])
      let (sink, tracker) = recordingSink(into: events)
      run(attachment, sink)
      sink.cancel()
      #expect(tracker.object == nil, "\(attachment): released")
      result[attachment.description] = events.value ?? []
    }
    return result
  }

  static func expectAll(
    _ byAttachment: [String: [String]], _ expected: [String],
    _ comment: String, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    for (attachment, events) in byAttachment.sorted(by: { $0.key < $1.key }) {
      #expect(events == expected, "\(comment), \(attachment)", sourceLocation: sourceLocation)
    }
  }

  @Test("erased shapes: subjects, merge, flatMap, zip, receive(on:), Deferred, Future, Sequence")
  func erasedShapesDeliverWhatUnerasedDo() {
    Self.expectAll(
      Self.eventsByAttachment { attachment, sink in
        let subject = PassthroughSubject<Int, Never>()
        attachment.attach(sink, to: subject)
        subject.send(1)
        subject.send(2)
        subject.send(completion: .finished)
        subject.send(3)
      }, ["1", "2", "finished"], "PassthroughSubject")
    Self.expectAll(
      Self.eventsByAttachment { attachment, sink in
        let subject = CurrentValueSubject<Int, Never>(0)
        attachment.attach(sink, to: subject)
        subject.send(1)
        subject.send(completion: .finished)
      }, ["0", "1", "finished"], "CurrentValueSubject")
    Self.expectAll(
      Self.eventsByAttachment { attachment, sink in
        let subject = PassthroughSubject<Int, Never>()
        attachment.attach(sink, to: Publishers.Merge(Just(1), subject))
        subject.send(2)
        subject.send(completion: .finished)
      }, ["1", "2", "finished"], "Merge(Just, subject)")
    Self.expectAll(
      Self.eventsByAttachment { attachment, sink in
        attachment.attach(sink, to: [1, 2, 3].publisher.flatMap { Just($0 * 10) })
      }, ["10", "20", "30", "finished"], "flatMap(Just)")
    Self.expectAll(
      Self.eventsByAttachment { attachment, sink in
        attachment.attach(
          sink,
          to: [1, 2].publisher.flatMap { Just($0).eraseToAnyPublisher() }.eraseToAnyPublisher())
      }, ["1", "2", "finished"], "flatMap(erased Just), erased")
    Self.expectAll(
      Self.eventsByAttachment { attachment, sink in
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<Int, Never>()
        attachment.attach(sink, to: a.zip(b).map { $0 + $1 })
        a.send(1)
        a.send(2)
        b.send(10)
        b.send(20)
        a.send(completion: .finished)
      }, ["11", "22", "finished"], "zip")
    Self.expectAll(
      Self.eventsByAttachment { attachment, sink in
        attachment.attach(sink, to: Just(1).receive(on: ImmediateScheduler.shared))
      }, ["1", "finished"], "receive(on:)")
    Self.expectAll(
      Self.eventsByAttachment { attachment, sink in
        attachment.attach(sink, to: Deferred { Just(4) })
      }, ["4", "finished"], "Deferred(Just)")
    Self.expectAll(
      Self.eventsByAttachment { attachment, sink in
        attachment.attach(sink, to: Future<Int, Never> { $0(.success(5)) })
      }, ["5", "finished"], "Future")
    Self.expectAll(
      Self.eventsByAttachment { attachment, sink in
        attachment.attach(sink, to: [6, 7].publisher)
      }, ["6", "7", "finished"], "Sequence")
    Self.expectAll(
      Self.eventsByAttachment { attachment, sink in
        attachment.attach(sink, to: Spy(Spy(Just(8))))
      }, ["8", "finished"], "pass-through wrappers")
    Self.expectAll(
      Self.eventsByAttachment { attachment, sink in
        attachment.attach(sink, to: Just(1).map { $0 + 1 })
      }, ["2", "finished"], "Just.map")
  }

  @Test("erased share(): two sinks, cancelling one, the other keeps going")
  func erasedShare() {
    for attachment in Attachment.allCases {
      let subject = PassthroughSubject<Int, Never>()
      let shared = subject.share()
      let eventsA = Box<[String]>([])
      let eventsB = Box<[String]>([])
      let (a, trackerA) = recordingSink(into: eventsA)
      let (b, trackerB) = recordingSink(into: eventsB)
      attachment.attach(a, to: shared)
      attachment.attach(b, to: shared)
      subject.send(1)
      a.cancel()
      subject.send(2)
      subject.send(completion: .finished)
      #expect(eventsA.value == ["1"], "\(attachment)")
      #expect(eventsB.value == ["1", "2", "finished"], "\(attachment)")
      #expect(trackerA.object == nil && trackerB.object == nil, "\(attachment)")
    }
  }

  @Test("handleEvents and print around Just, erased into a sink: Combine's order of events")
  func handleEventsAndPrint() {
    for attachment in Attachment.allCases {
      let log = Box<[String]>([])
      let events = Box<[String]>([])
      let (sink, _) = recordingSink(into: events)
      attachment.attach(
        sink,
        to: Just(1).handleEvents(
          receiveSubscription: { subscription in
            log.update { $0?.append("subscription \(subscription)") }
          },
          receiveOutput: { value in log.update { $0?.append("output \(value)") } },
          receiveCompletion: { completion in log.update { $0?.append("completion \(completion)") }
          },
          receiveCancel: { log.update { $0?.append("cancel") } },
          receiveRequest: { demand in log.update { $0?.append("request \(demand)") } }))
      #expect(
        log.value == ["subscription Just", "request unlimited", "output 1", "completion finished"],
        "\(attachment)")
      #expect(events.value == ["1", "finished"], "\(attachment)")

      let lines = Lines()
      let (printed, _) = recordingSink(into: Box<[String]>([]))
      attachment.attach(printed, to: Just(3).print("p", to: lines))
      #expect(
        lines.lines == [
          "p: receive subscription: (Just)", "p: request unlimited", "p: receive value: (3)",
          "p: receive finished",
        ], "\(attachment)")
    }
  }

  @Test("assign(to: &published) and assign(to:on:) fed by Just, erased or not")
  func assignFedByJust() {
    final class Model: ObservableObject, @unchecked Sendable {
      @Published var count = 0
      var plain = 0
    }
    let model = Model()
    Just(3).assign(to: &model.$count)
    #expect(model.count == 3)
    Just(4).eraseToAnyPublisher().assign(to: &model.$count)
    #expect(model.count == 4)
    let cancellable = Just(5).eraseToAnyPublisher().assign(to: \.plain, on: model)
    #expect(model.plain == 5)
    cancellable.cancel()
  }

  // MARK: leaks

  @Test("closures released: erased subject dropped cancellable; Just; Optional; Result")
  func closuresReleased() {
    for throughMap in [false, true] {
      weak var weakTracker: Tracker?
      let subject = PassthroughSubject<Int, Never>()
      do {
        let tracker = Tracker()
        weakTracker = tracker
        let publisher =
          throughMap
          ? subject.eraseToAnyPublisher().map { $0 }.eraseToAnyPublisher()
          : subject.eraseToAnyPublisher()
        _ = publisher.sink { _ in tracker.touch() }
      }
      #expect(weakTracker == nil, "dropped cancellable cancels (erased subject)")
      subject.send(1)
    }
    weak var weakTracker: Tracker?
    var kept: [AnyCancellable] = []
    do {
      let tracker = Tracker()
      weakTracker = tracker
      kept.append(Just(1).sink { _ in tracker.touch() })
      kept.append(Just(1).eraseToAnyPublisher().sink { _ in tracker.touch() })
      kept.append(Optional(1).publisher.eraseToAnyPublisher().sink { _ in tracker.touch() })
      kept.append(
        Result<Int, TestError>.success(1).publisher.eraseToAnyPublisher().sink(
          receiveCompletion: { _ in tracker.touch() }, receiveValue: { _ in tracker.touch() }))
    }
    #expect(weakTracker == nil, "a completed sink holds no closure though its cancellable lives")
    kept.forEach { $0.cancel() }
  }

  @Test("many sinks attached concurrently to one erased subject, sending and cancelling")
  func concurrentErasedSubject() async {
    let subject = PassthroughSubject<Int, Never>()
    let erased = Shared(subject.eraseToAnyPublisher())
    let total = Box<Int>(0)
    let trackers = Box<[WeakReference<Tracker>]>([])
    await concurrently(400) { index in
      let tracker = Tracker()
      trackers.update { $0?.append(WeakReference(tracker)) }
      let sink = Subscribers.Sink<Int, Never>(
        receiveCompletion: { _ in tracker.touch() },
        receiveValue: { _ in
          tracker.touch()
          total.update { $0! += 1 }
        })
      if index % 2 == 0 {
        erased.value.subscribe(sink)
      } else {
        erased.value.subscribe(AnySubscriber(sink))
      }
      subject.send(index)
      Just(index).eraseToAnyPublisher().subscribe(sink)
      sink.cancel()
    }
    subject.send(completion: .finished)
    #expect((trackers.value ?? []).allSatisfy { $0.object == nil })
    #expect((total.value ?? 0) >= 400, "each sink saw at least its own send")
  }

  // MARK: more shapes

  /// A publisher that subscribes its subscriber to `upstream` twice (a naive "repeat").
  struct Twice<Upstream: Publisher>: Publisher {
    typealias Output = Upstream.Output
    typealias Failure = Upstream.Failure
    let upstream: Upstream
    func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
      upstream.receive(subscriber: subscriber)
      upstream.receive(subscriber: subscriber)
    }
  }

  /// A publisher that keeps the subscriber and passes it to `upstream` only when `release()`
  /// is called (as an app's lazily connecting source does).
  final class Later<Upstream: Publisher>: Publisher, @unchecked Sendable {
    typealias Output = Upstream.Output
    typealias Failure = Upstream.Failure
    let upstream: Upstream
    let pending = Box<[(Upstream) -> Void]>([])
    init(_ upstream: Upstream) { self.upstream = upstream }
    func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
      pending.update { $0?.append { $0.receive(subscriber: subscriber) } }
    }
    func release() {
      let all = pending.update { list in
        defer { list = [] }
        return list ?? []
      }
      for each in all { each(upstream) }
    }
  }

  @Test("operators that subscribe a second publisher: catch, append, switchToLatest, retry")
  func operatorsSubscribingSecondPublishers() {
    Self.expectAll(
      Self.eventsByAttachment { attachment, sink in
        attachment.attach(sink, to: Fail<Int, TestError>(error: TestError()).catch { _ in Just(1) })
      }, ["1", "finished"], "catch(Just)")
    Self.expectAll(
      Self.eventsByAttachment { attachment, sink in
        attachment.attach(sink, to: Just(1).append(Just(2)).prepend(Just(0)))
      }, ["0", "1", "2", "finished"], "prepend/append Just")
    Self.expectAll(
      Self.eventsByAttachment { attachment, sink in
        attachment.attach(
          sink, to: [1, 2].publisher.map { Just($0).eraseToAnyPublisher() }.switchToLatest())
      }, ["1", "2", "finished"], "switchToLatest(erased Just)")
    Self.expectAll(
      Self.eventsByAttachment { attachment, sink in
        attachment.attach(
          sink, to: Just(1).setFailureType(to: TestError.self).retry(2).replaceError(with: 0))
      }, ["1", "finished"], "retry")
    Self.expectAll(
      Self.eventsByAttachment { attachment, sink in
        attachment.attach(sink, to: Twice(upstream: Just(1)))
      }, ["1", "finished"], "a naive repeat of Just")
    Self.expectAll(
      Self.eventsByAttachment { attachment, sink in
        let subject = PassthroughSubject<Int, Never>()
        attachment.attach(sink, to: Twice(upstream: subject))
        subject.send(1)
      }, ["1"], "a naive repeat of a subject")
  }

  @Test("a lazily subscribing wrapper: the sink is cancelled or fed by Just before it connects")
  func lazilySubscribingWrapper() {
    for attachment in Attachment.allCases {
      let events = Box<[String]>([])
      let (sink, tracker) = recordingSink(into: events)
      let later = Later(Just(1))
      attachment.attach(sink, to: later)
      sink.cancel()
      later.release()
      #expect(events.value == [], "\(attachment): cancelled before connecting")
      #expect(tracker.object == nil, "\(attachment)")

      let events2 = Box<[String]>([])
      let (sink2, _) = recordingSink(into: events2)
      let lazySubject = PassthroughSubject<Int, Never>()
      let later2 = Later(lazySubject)
      attachment.attach(sink2, to: later2)
      attachment.attach(sink2, to: Just(9))
      later2.release()
      lazySubject.send(10)
      #expect(events2.value == ["9", "finished"], "\(attachment): Just came first")
    }
  }

  @Test("AnyPublisher: a non-sink subscriber is still seen as an AnySubscriber with its identity")
  func wrappedPublisherSeesOtherSubscribers() {
    let spy = Spy(Just(1))
    let recorder = RecordingSubscriber<Int, Never>()
    spy.eraseToAnyPublisher().subscribe(recorder)
    let anonymous = AnySubscriber<Int, Never>(receiveValue: { _ in .none })
    spy.eraseToAnyPublisher().subscribe(anonymous)
    let seen = spy.seen.value ?? []
    #expect(seen.count == 2)
    #expect(seen.first?.identifier == recorder.combineIdentifier)
    #expect(seen.last?.identifier == anonymous.combineIdentifier)
    #expect(seen.last?.description == "Anonymous AnySubscriber")
    #expect(recorder.values == [1])
  }

  @Test("a sink fed by Just on one thread while another hands it a subscription")
  func justRacingAHandedSubscription() async {
    for round in 0..<300 {
      let attachment = Attachment.allCases[round % Attachment.allCases.count]
      let events = Box<[String]>([])
      let (sink, tracker) = recordingSink(into: events)
      let subscription = TestSubscription()
      let shared = Shared(sink)
      await simultaneously(
        { attachment.attach(shared.value, to: Just(1)) },
        { shared.value.receive(subscription: subscription) })
      let seen = events.value ?? []
      if seen.isEmpty {
        #expect(subscription.requests == [.unlimited] && subscription.cancelCount == 0)
        sink.cancel()
        #expect(subscription.cancelCount == 1)
      } else {
        #expect(seen == ["1", "finished"], "\(attachment)")
        #expect(subscription.requests == [] && subscription.cancelCount == 1, "\(attachment)")
      }
      #expect(tracker.object == nil, "\(attachment)")
    }
  }
}
