import Dispatch
import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// Values whose `deinit` calls back into the library, released while an operator holds its own
/// lock: a `deinit` that sends into the operator's upstream, reads the property it was stored
/// in, or touches `objectWillChange`, re-enters that lock (`Mutex` is not recursive: a trap).
/// Each test runs in a process of its own, with a deadline against a hang.
@Suite(
  "Liveness: values whose deinit calls back, released under an operator's lock", .serialized)
struct DeinitUnderLockTests {
  /// A resource whose `deinit` calls back (sends a "closed" event, reads its owner, …).
  typealias Resource = DeinitCallback

  enum Event: @unchecked Sendable {
    // Safety: its only payload is a `Resource` (see there).
    case opened(Resource)
    case closed
  }

  /// A subscriber that never requests: what it is offered stays in the operator's buffer.
  final class Idle<Input>: Subscriber, @unchecked Sendable {
    // Safety: the one mutable field is in a lock.
    typealias Failure = Never
    let subscription = Lock<(any Subscription)?>(nil)
    let combineIdentifier = CombineIdentifier()
    func receive(subscription: any Subscription) {
      self.subscription.withLock { $0 = subscription }
    }
    func receive(_ input: Input) -> Subscribers.Demand { .none }
    func receive(completion: Subscribers.Completion<Never>) {}
    func cancel() { subscription.withLock { $0.take() }?.cancel() }
  }

  final class Model: ObservableObject, @unchecked Sendable {
    // Safety: `@Published` storage is thread-safe (its own lock); nothing else is mutable.
    @Published var resource: Resource?
    @Published var closedCount = 0
  }

  /// `@Published`: the old value's last reference is the property's storage, which drops it
  /// under its lock (`PublishedStorage.set`); its `deinit` announcing the change on the owner's
  /// `objectWillChange` (a SwiftUI-style model) re-enters that lock.
  @Test("@Published: the replaced value's deinit touches objectWillChange")
  func publishedReplacedValueTouchesObjectWillChange() async {
    await #expect(processExitsWith: .success) {
      exitUnlessReturns {
        let model = Model()
        let changes = model.objectWillChange.sink {}
        model.resource = Resource { [weak model] in model?.objectWillChange.send() }
        model.resource = nil
        withExtendedLifetime(changes) {}
      }
    }
  }

  /// `@Published`: the replaced value's `deinit` reads the property it was stored in.
  @Test("@Published: the replaced value's deinit reads the property")
  func publishedReplacedValueReadsProperty() async {
    await #expect(processExitsWith: .success) {
      exitUnlessReturns {
        let model = Model()
        model.resource = Resource { [weak model] in _ = model?.resource }
        model.resource = nil
      }
    }
  }

  /// `debounce`: `cancel()` drops the pending value under the operator's lock
  /// (`DebounceSubscription.State.terminate`); its `deinit` sends "closed" into the upstream
  /// subject, which is still subscribed and delivers into the operator's `receive`.
  @Test("debounce: cancel drops a pending value whose deinit sends into the upstream")
  func debounceCancelReleasesPendingUnderLock() async {
    await #expect(processExitsWith: .success) {
      exitUnlessReturns {
        let events = PassthroughSubject<Event, Never>()
        let queue = DispatchQueue(label: "debounce")
        let sink = events.debounce(for: .seconds(60), scheduler: queue).sink { _ in }
        events.send(.opened(Resource { events.send(.closed) }))
        sink.cancel()
      }
    }
  }

  /// `throttle(latest: true)`: `cancel()` drops the value waiting for the interval's end under
  /// the operator's lock; its `deinit` sends into the upstream subject.
  @Test("throttle: cancel drops a waiting value whose deinit sends into the upstream")
  func throttleCancelReleasesPendingUnderLock() async {
    await #expect(processExitsWith: .success) {
      exitUnlessReturns {
        let events = PassthroughSubject<Event, Never>()
        let queue = DispatchQueue(label: "throttle")
        let first = DispatchSemaphore(value: 0)
        let sink = events.throttle(for: .seconds(60), scheduler: queue, latest: true)
          .sink { _ in first.signal() }
        events.send(.closed)
        first.wait()  // the first value is emitted at once; the next waits for 60 s
        events.send(.opened(Resource { events.send(.closed) }))
        sink.cancel()
      }
    }
  }

  /// `buffer`: `cancel()` empties the buffer under the operator's lock; a buffered value's
  /// `deinit` sends into the upstream subject.
  @Test("buffer: cancel drops buffered values whose deinit sends into the upstream")
  func bufferCancelReleasesValuesUnderLock() async {
    await #expect(processExitsWith: .success) {
      exitUnlessReturns {
        let events = PassthroughSubject<Event, Never>()
        let idle = Idle<Event>()
        events.buffer(size: 4, prefetch: .keepFull, whenFull: .dropOldest).subscribe(idle)
        events.send(.opened(Resource { events.send(.closed) }))
        idle.cancel()
      }
    }
  }

  /// `buffer(whenFull: .dropOldest)`: the oldest value is dropped under the operator's lock as
  /// a new one arrives; its `deinit` cancels the subscription (the resource's owner ends).
  @Test("buffer: a dropped oldest value's deinit cancels the subscription")
  func bufferDropOldestReleasesUnderLock() async {
    await #expect(processExitsWith: .success) {
      exitUnlessReturns {
        let events = PassthroughSubject<Event, Never>()
        let idle = Idle<Event>()
        // `.byRequest`: the buffer asks for `.unlimited`, so the second value arrives (with
        // `.keepFull` it was never asked for: the resource stayed buffered, its closure
        // keeping `idle` and so the subscription, a cycle LeakSanitizer reported).
        events.buffer(size: 1, prefetch: .byRequest, whenFull: .dropOldest).subscribe(idle)
        events.send(.opened(Resource { idle.cancel() }))
        events.send(.closed)  // drops the resource
        idle.cancel()
      }
    }
  }
}

extension DeinitUnderLockTests {
  /// `collect(.byTime)`: `cancel()` empties the values collected so far under the operator's
  /// lock; a collected value's `deinit` sends into the upstream subject.
  @Test("collect(.byTime): cancel drops collected values whose deinit sends into the upstream")
  func collectByTimeCancelReleasesValuesUnderLock() async {
    await #expect(processExitsWith: .success) {
      exitUnlessReturns {
        let events = PassthroughSubject<Event, Never>()
        let queue = DispatchQueue(label: "collect")
        let sink = events.collect(.byTime(queue, .seconds(60))).sink { _ in }
        events.send(.opened(Resource { events.send(.closed) }))
        sink.cancel()
      }
    }
  }
}
