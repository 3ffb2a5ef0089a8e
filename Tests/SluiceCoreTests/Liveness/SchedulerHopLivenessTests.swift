import Foundation
import SluiceTestSupport
import SluiceTesting
import Synchronization
import Testing

@testable import SluiceCore

/// `receive(on:)`, `delay` and `subscribe(on:)` on a scheduler that runs actions concurrently:
/// one action performs at a time and the others' items are owed to it, but no action performs
/// more than a batch of them while a producer never pauses — it hands the rest back to the
/// scheduler (see `HandOffQueue`). Each action here is measured: how many deliveries (or upstream
/// calls) happened on its thread while it ran. (Serialized: each test's producer and queue
/// would otherwise fight the others' for the cores.)
@Suite(
  "Liveness: scheduler actions perform a bounded batch while a producer never pauses", .serialized)
struct SchedulerHopLivenessTests {
  /// `HandOffQueue.batch`.
  static let batch = 32

  /// Counts, per scheduler action, the work done on its thread while it ran.
  final class ActionMeter: Sendable {
    let counts = Lock<[UInt: Int]>([:])  // (`Lock`: the thread sanitizer sees its hand-overs)
    let worst = Atomic<Int>(0)
    let total = Atomic<Int>(0)

    /// Runs `action`, then records how much work it did on this thread.
    func measure(_ action: () -> Void) {
      let thread = currentThreadIdentity()
      counts.withLock { $0[thread] = 0 }
      action()
      let done = counts.withLock { $0.removeValue(forKey: thread) ?? 0 }
      worst.max(done, ordering: .relaxed)
    }

    /// Polls until `count` units were done, ticking `progress` whenever the total moved.
    func waitForTotal(_ count: Int, _ progress: CallProgress) {
      var seen = 0
      while seen < count {
        usleep(1_000)
        let now = total.load(ordering: .relaxed)
        if now > seen { progress.tick() }
        seen = now
      }
    }

    /// One unit of work done on this thread (a delivery, an upstream call).
    func worked() {
      let thread = currentThreadIdentity()
      counts.withLock { counts in
        if let count = counts[thread] { counts[thread] = count + 1 }
      }
      total.add(1, ordering: .relaxed)
    }
  }

  /// A concurrent `DispatchQueue` whose actions are measured.
  struct MeasuredScheduler: Scheduler, Sendable {
    typealias SchedulerTimeType = DispatchQueue.SchedulerTimeType
    typealias SchedulerOptions = DispatchQueue.SchedulerOptions
    let queue = DispatchQueue(label: "SchedulerHopLivenessTests", attributes: .concurrent)
    let meter: ActionMeter

    var now: SchedulerTimeType { queue.now }
    var minimumTolerance: SchedulerTimeType.Stride { queue.minimumTolerance }

    func schedule(options: SchedulerOptions?, _ action: @escaping () -> Void) {
      let action = UncheckedSendable(action)
      queue.schedule(options: options) { meter.measure(action.value) }
    }

    func schedule(
      after date: SchedulerTimeType, tolerance: SchedulerTimeType.Stride,
      options: SchedulerOptions?, _ action: @escaping () -> Void
    ) {
      let action = UncheckedSendable(action)
      queue.schedule(after: date, tolerance: tolerance, options: options) {
        meter.measure(action.value)
      }
    }

    func schedule(
      after date: SchedulerTimeType, interval: SchedulerTimeType.Stride,
      tolerance: SchedulerTimeType.Stride, options: SchedulerOptions?,
      _ action: @escaping () -> Void
    ) -> any Cancellable {
      let action = UncheckedSendable(action)
      return queue.schedule(after: date, interval: interval, tolerance: tolerance, options: options)
      {
        meter.measure(action.value)
      }
    }
  }

  /// Sends without pause into `pipeline` until 20,000 values were delivered; returns the most
  /// work one action did, and whether the values came in order.
  func worstAction(
    _ pipeline: (PassthroughSubject<Int, Never>, MeasuredScheduler) -> AnyPublisher<Int, Never>
  ) async -> (worst: Int, inOrder: Bool) {
    let meter = ActionMeter()
    let subject = PassthroughSubject<Int, Never>()
    let last = Mutex((value: -1, inOrder: true))
    let sink = pipeline(subject, MeasuredScheduler(meter: meter)).sink { value in
      meter.worked()
      last.withLock { last in
        if value <= last.value { last.inOrder = false }
        last.value = value
      }
    }
    let producer = RacingProducer { subject.send($0) }
    let delivered = await callsReturn(whileRunning: producer) { progress in
      meter.waitForTotal(20_000, progress)
    }
    #expect(delivered, "20,000 values were delivered while the producer ran")
    sink.cancel()
    return (meter.worst.load(ordering: .relaxed), last.withLock { $0.inOrder })
  }

  @Test("receive(on:) a concurrent queue: no action delivers more than a batch")
  func receiveOn() async {
    let (worst, inOrder) = await worstAction { subject, scheduler in
      subject.receive(on: scheduler).eraseToAnyPublisher()
    }
    #expect(worst <= Self.batch, "the busiest action delivered \(worst) values")
    #expect(inOrder)
  }

  @Test("delay on a concurrent queue: no action delivers more than a batch")
  func delay() async {
    let (worst, inOrder) = await worstAction { subject, scheduler in
      subject.delay(for: .microseconds(1), scheduler: scheduler).eraseToAnyPublisher()
    }
    #expect(worst <= Self.batch, "the busiest action delivered \(worst) values")
    #expect(inOrder)
  }

  @Test("subscribe(on:) a concurrent queue: no action makes more than a batch of requests")
  func subscribeOn() async {
    let meter = ActionMeter()
    let requests = Mutex(Subscribers.Demand.none)
    let upstream = AnyPublisher<Int, Never>(
      Publishers.HandleEvents(
        upstream: Empty<Int, Never>(completeImmediately: false),
        receiveSubscription: nil, receiveOutput: nil, receiveCompletion: nil,
        receiveCancel: nil,
        receiveRequest: { demand in
          meter.worked()
          requests.withLock { $0 += demand }
        }))
    let subscription = Box<any Subscription>()
    let subscribed = DispatchSemaphore(value: 0)
    upstream.subscribe(on: MeasuredScheduler(meter: meter)).subscribe(
      AnySubscriber<Int, Never>(
        receiveSubscription: { received in
          subscription.set(received)
          subscribed.signal()
        }, receiveValue: { _ in .none }, receiveCompletion: { _ in }))
    await withCheckedContinuation { continuation in
      Thread.detachNewThread {
        subscribed.wait()
        continuation.resume()
      }
    }
    let shared = UncheckedSendable(subscription.value!)
    let producer = RacingProducer { _ in shared.value.request(.max(1)) }
    let made = await callsReturn(whileRunning: producer) { progress in
      meter.waitForTotal(20_000, progress)
    }
    #expect(made, "20,000 requests reached the upstream while the producer ran")
    shared.value.cancel()
    let worst = meter.worst.load(ordering: .relaxed)
    #expect(worst <= Self.batch, "the busiest action made \(worst) requests")
  }
}
