import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Testing

/// A publisher of one value (`Just`, `Optional.Publisher`, `Result.Publisher`) sends a sink its
/// value and completion without a subscription object, and `AnyPublisher` hands a sink to the
/// wrapped publisher as itself: what the sink (and its owner) observe must be what the
/// subscription and the `AnySubscriber` box gave it.
@Suite("A sink fed without a subscription object", .onThreadsOfTheirOwn)
struct SinkImmediateDeliveryTests {
  /// A sink recording what it receives; its closures capture a `Tracker`.
  static func recordingSink() -> (
    Subscribers.Sink<Int, Never>, Box<[String]>, WeakReference<Tracker>
  ) {
    let events = Box<[String]>([])
    let tracker = Tracker()
    let sink = Subscribers.Sink<Int, Never>(
      receiveCompletion: { completion in
        tracker.touch()
        events.update { $0?.append("\(completion)") }
      },
      receiveValue: { value in
        tracker.touch()
        events.update { $0?.append("\(value)") }
      })
    return (sink, events, WeakReference(tracker))
  }

  @Test("each single-value publisher, directly, erased, and through AnySubscriber")
  func everySingleValuePublisherDeliversTheValueThenFinished() {
    let publishers: [(String, AnyPublisher<Int, Never>)] = [
      ("Just", Just(7).eraseToAnyPublisher()),
      ("Optional", Optional(7).publisher.eraseToAnyPublisher()),
      ("Result", Result<Int, Never>.success(7).publisher.eraseToAnyPublisher()),
    ]
    for (name, publisher) in publishers {
      let (sink, events, tracker) = Self.recordingSink()
      publisher.subscribe(sink)
      #expect(events.value == ["7", "finished"], "\(name), erased")
      #expect(tracker.object == nil, "\(name): closures released at the completion")
    }
    let (direct, directEvents, _) = Self.recordingSink()
    Just(7).subscribe(direct)
    let (wrapped, wrappedEvents, _) = Self.recordingSink()
    Just(7).subscribe(AnySubscriber(wrapped))
    let (optional, optionalEvents, _) = Self.recordingSink()
    Optional(7).publisher.subscribe(optional)
    for events in [directEvents, wrappedEvents, optionalEvents] {
      #expect(events.value == ["7", "finished"])
    }
    let values = Box<[Int]>([])
    let cancellable = Just(8).sink { value in values.update { $0?.append(value) } }
    #expect(values.value == [8])
    cancellable.cancel()
  }

  @Test("a sink that already has a subscription keeps it and gets nothing from Just")
  func aSubscribedSinkIgnoresJust() {
    let (sink, events, _) = Self.recordingSink()
    let first = TestSubscription()
    sink.receive(subscription: first)
    Just(1).subscribe(sink)
    Just(2).eraseToAnyPublisher().subscribe(sink)
    #expect(events.value == [], "the subscription the sink would cancel delivers nothing")
    #expect(first.requests == [.unlimited] && first.cancelCount == 0)
    _ = sink.receive(3)
    sink.receive(completion: .finished)
    #expect(events.value == ["3", "finished"])
  }

  @Test("a completed or cancelled sink gets nothing from Just")
  func aFinishedSinkIgnoresJust() {
    let (completed, completedEvents, _) = Self.recordingSink()
    Just(1).subscribe(completed)
    Just(2).subscribe(completed)
    #expect(completedEvents.value == ["1", "finished"])
    let (cancelled, cancelledEvents, tracker) = Self.recordingSink()
    cancelled.cancel()
    Just(3).subscribe(cancelled)
    #expect(cancelledEvents.value == [])
    #expect(tracker.object == nil)
  }

  @Test("receiveValue cancelling its own sink: the completion is suppressed, as in Combine")
  func cancelFromReceiveValueSuppressesTheCompletion() {
    for erased in [false, true] {
      let holder = Box<Subscribers.Sink<Int, Never>>()
      let events = Box<[String]>([])
      let sink = Subscribers.Sink<Int, Never>(
        receiveCompletion: { completion in events.update { $0?.append("\(completion)") } },
        receiveValue: { value in
          events.update { $0?.append("\(value)") }
          holder.value?.cancel()
        })
      holder.set(sink)
      if erased {
        Just(5).eraseToAnyPublisher().subscribe(sink)
      } else {
        Just(5).subscribe(sink)
      }
      #expect(events.value == ["5"], "erased: \(erased)")
      holder.update { $0 = nil }
    }
  }

  @Test("Just racing another thread's cancel(): the value at most, the completion only before it")
  func justRacingCancel() async {
    for round in 0..<400 {
      let (sink, events, tracker) = Self.recordingSink()
      let shared = Shared(sink)
      await simultaneously(
        {
          if round % 2 == 0 {
            Just(1).subscribe(shared.value)
          } else {
            Just(1).eraseToAnyPublisher().subscribe(shared.value)
          }
        },
        { shared.value.cancel() })
      let seen = events.value ?? []
      #expect(seen == [] || seen == ["1"] || seen == ["1", "finished"], "round \(round): \(seen)")
      Just(2).subscribe(shared.value)
      #expect(events.value == seen, "nothing after both returned")
      #expect(tracker.object == nil, "closures released")
    }
  }

  @Test("an erased pipeline hands a sink to the wrapped publisher: demand, values, cancel")
  func erasedPipelineIntoASink() {
    let upstream = TestPublisher<Int, TestError>()
    let values = Box<[Int]>([])
    let completion = Box<Subscribers.Completion<TestError>>()
    let cancellable = upstream.map { $0 * 10 }.eraseToAnyPublisher().eraseToAnyPublisher()
      .sink(
        receiveCompletion: { completion.set($0) },
        receiveValue: { value in values.update { $0?.append(value) } })
    #expect(upstream.subscriptions.first?.requests == [.unlimited])
    upstream.send(1)
    upstream.send(2)
    cancellable.cancel()
    upstream.send(3)
    #expect(values.value == [10, 20])
    #expect(completion.value == nil)
    #expect(upstream.subscriptions.first?.cancelCount == 1)
    // Another subscriber still goes through AnySubscriber, with its own identity.
    let recorder = RecordingSubscriber<Int, Never>()
    [1, 2].publisher.eraseToAnyPublisher().subscribe(recorder)
    #expect(recorder.values == [1, 2] && recorder.completion == .finished)
  }

  @Test("a fulfilled Future: a sink gets the success and .finished, or the failure alone")
  func aFulfilledFutureIntoASink() {
    typealias Answer = Future<Int, TestError>
    let succeeded = Answer { $0(.success(4)) }
    let failed = Answer { $0(.failure(TestError())) }
    for (name, publisher, expected) in [
      ("success", succeeded.eraseToAnyPublisher(), ["4", "finished"]),
      ("failure", failed.eraseToAnyPublisher(), ["failure(\(TestError()))"]),
    ] {
      for attach in 0..<3 {
        let events = Box<[String]>([])
        let sink = Subscribers.Sink<Int, TestError>(
          receiveCompletion: { completion in events.update { $0?.append("\(completion)") } },
          receiveValue: { value in events.update { $0?.append("\(value)") } })
        switch attach {
        case 0: publisher.subscribe(sink)
        case 1: (name == "success" ? succeeded : failed).subscribe(sink)
        default: (name == "success" ? succeeded : failed).subscribe(AnySubscriber(sink))
        }
        #expect(events.value == expected, "\(name), attached \(attach)")
        // Once done, a second delivery is refused, as a second subscription would be.
        (name == "success" ? succeeded : failed).subscribe(sink)
        #expect(events.value == expected, "\(name), attached \(attach), again")
      }
    }
  }

  @Test("a Future fulfilled later still reaches a sink through its subscription, once")
  func aFutureFulfilledLaterIntoASink() {
    let promised = Box<Future<Int, Never>.Promise>()
    let future = Future<Int, Never> { promise in promised.set(promise) }
    let values = Box<[Int]>([])
    let finished = Box<Int>(0)
    let cancellables = (0..<3).map { _ in
      future.eraseToAnyPublisher().sink(
        receiveCompletion: { _ in finished.update { $0! += 1 } },
        receiveValue: { value in values.update { $0?.append(value) } })
    }
    #expect(values.value == [])
    promised.value?(.success(9))
    promised.value?(.success(10))
    #expect(values.value == [9, 9, 9] && finished.value == 3)
    let (sink, events, tracker) = Self.recordingSink()
    let first = TestSubscription()
    sink.receive(subscription: first)
    future.subscribe(sink)
    #expect(events.value == [] && first.cancelCount == 0, "a subscribed sink refuses it")
    sink.cancel()
    #expect(tracker.object == nil)
    cancellables.forEach { $0.cancel() }
  }
}
