import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Testing

@Suite("Subscribers.Sink", .onThreadsOfTheirOwn)
struct SinkTests {
  /// A sink whose closures capture a `Tracker`; the weak reference shows when they are released.
  static func trackedSink(receiveValue: @escaping (Int) -> Void)
    -> (Subscribers.Sink<Int, Never>, WeakReference<Tracker>)
  {
    let tracker = Tracker()
    let sink = Subscribers.Sink<Int, Never>(
      receiveCompletion: { _ in tracker.touch() },
      receiveValue: { value in
        tracker.touch()
        receiveValue(value)
      })
    return (sink, WeakReference(tracker))
  }

  @Test func requestsUnlimitedAndReceivesEverything() {
    let upstream = TestPublisher<Int, TestError>()
    let values = Box<[Int]>([])
    let completion = Box<Subscribers.Completion<TestError>>()
    let cancellable = upstream.sink(
      receiveCompletion: { completion.set($0) },
      receiveValue: { value in values.update { $0?.append(value) } })
    #expect(upstream.subscriptions.first?.requests == [.unlimited])
    upstream.send(1)
    upstream.send(2)
    upstream.send(completion: .failure(TestError()))
    #expect(values.value == [1, 2])
    #expect(completion.value == .failure(TestError()))
    cancellable.cancel()
  }

  @Test func cancelsASecondSubscription() {
    let sink = Subscribers.Sink<Int, Never>(receiveCompletion: { _ in }, receiveValue: { _ in })
    let first = TestSubscription()
    let second = TestSubscription()
    sink.receive(subscription: first)
    sink.receive(subscription: second)
    #expect(first.requests == [.unlimited] && first.cancelCount == 0)
    #expect(second.requests.isEmpty && second.cancelCount == 1)
  }

  @Test func cancelIsIdempotentThreadSafeAndReleasesClosures() async {
    let subscription = TestSubscription()
    let (sink, tracker) = Self.trackedSink { _ in }
    sink.receive(subscription: subscription)
    let shared = Shared(sink)
    await concurrently(32) { _ in shared.value.cancel() }
    #expect(subscription.cancelCount == 1)
    #expect(tracker.object == nil, "closures are released on cancel")
    #expect(sink.receive(1) == .none)
  }

  @Test("values racing cancel(): at most one in flight after it returns, closures released once")
  func valuesRacingCancel() async {
    for _ in 0..<500 {
      let afterCancel = Box<Int>(0)
      let cancelled = Box<Bool>(false)
      let (sink, tracker) = Self.trackedSink { _ in
        if cancelled.value == true { afterCancel.update { $0! += 1 } }
      }
      sink.receive(subscription: TestSubscription())
      let shared = Shared(sink)
      await simultaneously(
        {
          // From before cancel() until after it: some value is in flight when it closes.
          var value = 0
          while cancelled.value != true || value % 64 != 0 {
            _ = shared.value.receive(value)
            value += 1
          }
        },
        {
          shared.value.cancel()
          cancelled.set(true)
        })
      #expect(afterCancel.value! <= 1, "values delivered after cancel() returned")
      #expect(tracker.object == nil, "closures are released after cancel and the last value")
    }
  }

  @Test func completionReleasesClosuresAndNothingFollows() {
    let values = Box<[Int]>([])
    let (sink, tracker) = Self.trackedSink { value in values.update { $0?.append(value) } }
    sink.receive(subscription: TestSubscription())
    _ = sink.receive(1)
    sink.receive(completion: .finished)
    _ = sink.receive(2)
    #expect(values.value == [1])
    #expect(tracker.object == nil)
  }

  @Test func anyCancellableCancelsOnDeinit() {
    let upstream = TestPublisher<Int, Never>()
    do {
      _ = upstream.sink { _ in }
    }
    #expect(upstream.subscriptions.first?.cancelCount == 1)
  }

  @Test func descriptions() {
    let sink = Subscribers.Sink<Int, Never>(receiveCompletion: { _ in }, receiveValue: { _ in })
    #expect(String(describing: sink) == "Sink")
    #expect(sink.playgroundDescription as? String == "Sink")
  }
}

/// A weak reference a test keeps to check when an object is released.
struct WeakReference<Object: AnyObject> {
  weak var object: Object?
  init(_ object: Object) { self.object = object }
}

/// An object whose lifetime tests watch.
final class Tracker: @unchecked Sendable {
  // Safety: no state.
  func touch() {}
}

@Suite("Subscribers.Assign", .onThreadsOfTheirOwn)
struct AssignTests {
  final class Model: @unchecked Sendable {
    // Safety: written only by the serial pipeline under test.
    var value = 0
  }

  @Test func assignsEachValueAndReleasesTheObjectOnCompletion() {
    let subject = PassthroughSubject<Int, Never>()
    weak var weakModel: Model?
    var cancellable: AnyCancellable?
    do {
      let model = Model()
      weakModel = model
      cancellable = subject.assign(to: \.value, on: model)
      subject.send(3)
      #expect(model.value == 3)
    }
    #expect(weakModel != nil, "held strongly until completion")
    subject.send(completion: .finished)
    #expect(weakModel == nil)
    _ = cancellable
  }

  @Test func cancelReleasesTheObject() {
    let subject = PassthroughSubject<Int, Never>()
    weak var weakModel: Model?
    let cancellable: AnyCancellable
    do {
      let model = Model()
      weakModel = model
      cancellable = subject.assign(to: \.value, on: model)
    }
    cancellable.cancel()
    #expect(weakModel == nil)
  }

  /// Issue 40: as in Combine, a completion before any subscription is ignored — the object is
  /// kept and a subscription that follows is served.
  @Test func aCompletionBeforeTheSubscriptionIsIgnored() {
    let model = Model()
    let assign = Subscribers.Assign(object: model, keyPath: \.value)
    assign.receive(completion: .finished)
    #expect(assign.object === model)
    let subscription = TestSubscription()
    assign.receive(subscription: subscription)
    #expect(subscription.requests == [.unlimited])
    #expect(assign.receive(7) == .none)
    #expect(model.value == 7)
  }

  /// "Differences from Combine" (DocC): a `cancel()` before the subscription is honoured (Combine
  /// forgets it and keeps the object).
  @Test func aCancelBeforeTheSubscriptionIsHonoured() {
    let model = Model()
    let assign = Subscribers.Assign(object: model, keyPath: \.value)
    assign.cancel()
    #expect(assign.object == nil)
    let subscription = TestSubscription()
    assign.receive(subscription: subscription)
    #expect(subscription.isCancelled)
    #expect(subscription.requests == [])
  }

  @Test func description() {
    let assign = Subscribers.Assign(object: Model(), keyPath: \.value)
    #expect(assign.description == "Assign Model.")
    #expect(assign.object != nil)
  }
}

@Suite("AnySubscriber", .onThreadsOfTheirOwn)
struct AnySubscriberTests {
  @Test func wrapsASubscriberAndKeepsItsIdentityAndDescription() {
    let recorder = RecordingSubscriber<Int, Never>()
    let erased = AnySubscriber(recorder)
    #expect(erased.combineIdentifier == recorder.combineIdentifier)
    #expect(erased.description == "RecordingSubscriber")
    [1, 2].publisher.subscribe(erased)
    #expect(recorder.values == [1, 2])
    #expect(AnySubscriber(erased).combineIdentifier == erased.combineIdentifier)
  }

  @Test func fromClosures() {
    let values = Box<[Int]>([])
    let erased = AnySubscriber<Int, Never>(
      receiveSubscription: { $0.request(.max(2)) },
      receiveValue: { value in
        values.update { $0?.append(value) }; return .none
      })
    [1, 2, 3].publisher.subscribe(erased)
    #expect(values.value == [1, 2])
    #expect(erased.description == "Anonymous AnySubscriber")
    #expect(erased.playgroundDescription as? String == "Anonymous AnySubscriber")
    let silent = AnySubscriber<Int, Never>()
    #expect(silent.receive(1) == .none)
  }

  @Test func fromASubject() {
    let subject = PassthroughSubject<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    subject.subscribe(recorder)
    let erased = AnySubscriber(subject)
    #expect(erased.description == "Subject")
    [4, 5].publisher.subscribe(erased)
    #expect(recorder.values == [4, 5])
    #expect(recorder.completion == .finished)
  }
}

@Suite("AnyCancellable", .onThreadsOfTheirOwn)
struct AnyCancellableTests {
  @Test func cancelRunsOnceFromManyThreads() async {
    let count = Box<Int>(0)
    let cancellable = AnyCancellable { count.update { $0! += 1 } }
    let shared = Shared(cancellable)
    await concurrently(64) { _ in shared.value.cancel() }
    #expect(count.value == 1)
  }

  @Test func storeInSetAndCollection() {
    let count = Box<Int>(0)
    var set = Set<AnyCancellable>()
    var array = [AnyCancellable]()
    AnyCancellable { count.update { $0! += 1 } }.store(in: &set)
    AnyCancellable { count.update { $0! += 1 } }.store(in: &array)
    TestSubscription().store(in: &set)
    #expect(set.count == 2 && array.count == 1)
    set.removeAll()
    array.removeAll()
    #expect(count.value == 2, "deinit cancels")
  }

  @Test func wrapsACancellable() {
    let subscription = TestSubscription()
    AnyCancellable(subscription).cancel()
    #expect(subscription.cancelCount == 1)
    let inner = AnyCancellable(subscription)
    AnyCancellable(inner).cancel()
    #expect(subscription.cancelCount == 2)
  }
}
