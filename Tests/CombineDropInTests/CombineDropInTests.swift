// Written as a client of Apple's Combine would write it — `import Combine`, qualified names, a
// custom publisher, subscription, subscriber and scheduler, `@Published`, `canImport(Combine)` —
// with nothing of Sluice's own API. On Apple platforms it runs against Apple's Combine; elsewhere
// against the package's `Combine` product (Sluice under Apple's module name).
#if canImport(Combine)
  import Combine
  import Foundation
  import Testing

  /// A publisher written against Combine's protocols with qualified names, as libraries do
  /// (`Combine.Subscription` avoids clashes with their own `Subscription` types).
  struct Countdown: Combine.Publisher {
    typealias Output = Int
    typealias Failure = Never
    let from: Int

    func receive<S: Combine.Subscriber>(subscriber: S)
    where S.Input == Int, S.Failure == Never {
      subscriber.receive(subscription: CountdownSubscription(from: from, subscriber: subscriber))
    }
  }

  /// Lock-protected state; demand honoured, nothing after cancel.
  final class CountdownSubscription<S: Combine.Subscriber>: Combine.Subscription,
    @unchecked Sendable
  where S.Input == Int, S.Failure == Never {
    // Safety: every mutable property is read and written with `lock` held.
    private let lock = NSLock()
    private var next: Int
    private var subscriber: S?

    init(from: Int, subscriber: S) {
      self.next = from
      self.subscriber = subscriber
    }

    func request(_ demand: Combine.Subscribers.Demand) {
      var demand = demand
      while demand > .none {
        lock.lock()
        guard let subscriber, next >= 0 else {
          lock.unlock()
          return
        }
        let value = next
        next -= 1
        let done = next < 0
        if done { self.subscriber = nil }
        lock.unlock()
        demand -= 1
        demand += subscriber.receive(value)
        if done {
          subscriber.receive(completion: .finished)
          return
        }
      }
    }

    func cancel() {
      lock.lock()
      subscriber = nil
      lock.unlock()
    }
  }

  /// A subscriber that asks for one value at a time, with qualified names throughout.
  final class OneAtATime: Combine.Subscriber, Combine.Cancellable, @unchecked Sendable {
    typealias Input = Int
    typealias Failure = Never
    // Safety: every mutable property is read and written with `lock` held.
    private let lock = NSLock()
    private var subscription: (any Combine.Subscription)?
    private var _received: [Int] = []
    private var _completed = false

    var received: [Int] { lock.withLock { _received } }
    var completed: Bool { lock.withLock { _completed } }

    func receive(subscription: any Combine.Subscription) {
      lock.withLock { self.subscription = subscription }
      subscription.request(.max(1))
    }

    func receive(_ input: Int) -> Combine.Subscribers.Demand {
      lock.withLock { _received.append(input) }
      return .max(1)
    }

    func receive(completion: Combine.Subscribers.Completion<Never>) {
      lock.withLock { _completed = true }
    }

    func cancel() {
      let subscription = lock.withLock {
        defer { self.subscription = nil }
        return self.subscription
      }
      subscription?.cancel()
    }
  }

  /// A scheduler written against `Combine.Scheduler`, as combine-schedulers and test helpers do:
  /// runs actions at once, in virtual time that only moves forward.
  struct StepScheduler: Combine.Scheduler {
    struct Time: Strideable, Hashable {
      var tick: Int
      func distance(to other: Time) -> Stride { Stride(other.tick - tick) }
      func advanced(by n: Stride) -> Time { Time(tick: tick + n.magnitude) }
    }

    struct Stride: Combine.SchedulerTimeIntervalConvertible, Comparable, SignedNumeric, Hashable {
      var magnitude: Int
      init(_ value: Int) { magnitude = value }
      init?<T: BinaryInteger>(exactly source: T) {
        guard let value = Int(exactly: source) else { return nil }
        magnitude = value
      }
      init(integerLiteral value: Int) { magnitude = value }
      static func seconds(_ s: Int) -> Stride { Stride(s) }
      static func seconds(_ s: Double) -> Stride { Stride(Int(s)) }
      static func milliseconds(_ ms: Int) -> Stride { Stride(ms / 1000) }
      static func microseconds(_ us: Int) -> Stride { Stride(us / 1_000_000) }
      static func nanoseconds(_ ns: Int) -> Stride { Stride(ns / 1_000_000_000) }
      static func < (a: Stride, b: Stride) -> Bool { a.magnitude < b.magnitude }
      static func + (a: Stride, b: Stride) -> Stride { Stride(a.magnitude + b.magnitude) }
      static func - (a: Stride, b: Stride) -> Stride { Stride(a.magnitude - b.magnitude) }
      static func * (a: Stride, b: Stride) -> Stride { Stride(a.magnitude * b.magnitude) }
      static func += (a: inout Stride, b: Stride) { a = a + b }
      static func -= (a: inout Stride, b: Stride) { a = a - b }
      static func *= (a: inout Stride, b: Stride) { a = a * b }
    }

    var now: Time { Time(tick: 0) }
    var minimumTolerance: Stride { Stride(0) }
    func schedule(options: Never?, _ action: @escaping () -> Void) { action() }
    func schedule(
      after date: Time, tolerance: Stride, options: Never?, _ action: @escaping () -> Void
    ) {
      action()
    }
    func schedule(
      after date: Time, interval: Stride, tolerance: Stride, options: Never?,
      _ action: @escaping () -> Void
    ) -> any Combine.Cancellable {
      action()
      return Combine.AnyCancellable {}
    }
  }

  final class Settings: Combine.ObservableObject {
    @Combine.Published var volume = 0
  }

  @Suite("import Combine: code written for Apple's Combine")
  struct CombineDropInTests {
    @Test func qualifiedOperatorTypesAndAHandWrittenPublisher() {
      let mapped: Combine.Publishers.Map<Countdown, String> = Countdown(from: 3).map { "\($0)" }
      var seen: [String] = []
      let cancellable: Combine.AnyCancellable = mapped.sink { seen.append($0) }
      #expect(seen == ["3", "2", "1", "0"])
      cancellable.cancel()
    }

    @Test func aHandWrittenSubscriberGetsOneValueAtATime() {
      let subscriber = OneAtATime()
      Combine.Publishers.Sequence<[Int], Never>(sequence: [1, 2, 3])
        .filter { $0 != 2 }
        .subscribe(subscriber)
      #expect(subscriber.received == [1, 3])
      #expect(subscriber.completed)
    }

    @Test func subjectsFutureAndErasure() {
      let subject = Combine.PassthroughSubject<Int, Never>()
      let current = Combine.CurrentValueSubject<String, Never>("a")
      var log: [String] = []
      let erased: Combine.AnyPublisher<String, Never> = subject.map(String.init)
        .merge(with: current)
        .eraseToAnyPublisher()
      var bag = Set<Combine.AnyCancellable>()
      erased.sink { log.append($0) }.store(in: &bag)
      subject.send(1)
      current.send("b")
      Combine.Future<String, Never> { $0(.success("f")) }.sink { log.append($0) }.store(in: &bag)
      #expect(log == ["a", "1", "b", "f"])
    }

    @Test func aHandWrittenSchedulerDrivesTimeOperators() {
      var seen: [Int] = []
      let cancellable = Countdown(from: 2)
        .delay(for: 5, scheduler: StepScheduler())
        .receive(on: StepScheduler())
        .sink { seen.append($0) }
      #expect(seen == [2, 1, 0])
      _ = cancellable
    }

    @Test func publishedPropertiesAndObjectWillChange() {
      let settings = Settings()
      var volumes: [Int] = []
      var changes = 0
      let a = settings.$volume.sink { volumes.append($0) }
      let b = settings.objectWillChange.sink { _ in changes += 1 }
      settings.volume = 7
      #expect(volumes == [0, 7])
      #expect(changes == 1)
      _ = (a, b)
    }

    @Test func foundationPublishers() {
      let center = NotificationCenter()
      let name = Notification.Name("CombineDropIn")
      var names: [Notification.Name] = []
      let cancellable = center.publisher(for: name).map(\.name).sink { names.append($0) }
      center.post(name: name, object: nil)
      #expect(names == [name])
      cancellable.cancel()
    }

    @Test func awaitingValues() async {
      var collected: [Int] = []
      for await value in Countdown(from: 2).values {
        collected.append(value)
      }
      #expect(collected == [2, 1, 0])
    }

    @Test func errorsAndCompletionsByQualifiedName() {
      struct Failure: Swift.Error, Equatable {}
      var completion: Combine.Subscribers.Completion<Failure>?
      let cancellable = Combine.Fail<Int, Failure>(error: Failure())
        .retry(1)
        .sink(receiveCompletion: { completion = $0 }, receiveValue: { _ in })
      #expect(completion == .failure(Failure()))
      _ = cancellable
    }
  }
#else
  import Testing

  /// Without a `Combine` module the suite above would compile to nothing and pass; this fails.
  @Test func combineCanBeImported() {
    Issue.record("canImport(Combine) is false: the Combine product is not linked on this platform")
  }
#endif
