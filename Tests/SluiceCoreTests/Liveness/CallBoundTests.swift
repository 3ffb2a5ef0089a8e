import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// One call's work is bounded for the whole pipeline it enters, not per turn: a `send` from a
/// thread outside any delivery delivers at most ``DeliveryContext/allowancePerCall`` values of
/// other threads, however many subjects and operators its values pass through. Four threads send
/// without pause into pipelines shaped as apps build them, the subscriber doing ~5 µs of work
/// per value; for every call, the values of other senders it delivered are counted, and the
/// largest count must be within the bound.
@Suite("Liveness: one call's work is bounded across the whole pipeline", .onThreadsOfTheirOwn)
struct CallBoundTests {
  /// Each sending thread's meter: which sender it is and how many values of others the call in
  /// progress has delivered.
  final class CallMeter: @unchecked Sendable {
    // Safety: only the sending thread reads and writes it (it is found through that thread's
    // thread-local storage).
    let sender: Int
    var othersInCall = 0
    var worst = 0
    init(sender: Int) { self.sender = sender }

    static let key: pthread_key_t = {
      var key = pthread_key_t()
      pthread_key_create(&key, nil)
      return key
    }()

    /// The meter of the calling thread, if it is one of the senders.
    static var current: CallMeter? {
      guard let raw = pthread_getspecific(key) else { return nil }
      return Unmanaged<CallMeter>.fromOpaque(raw).takeUnretainedValue()
    }

    func install() { pthread_setspecific(Self.key, Unmanaged.passUnretained(self).toOpaque()) }

    /// One call: counts what it delivers of others.
    func call(_ body: () -> Void) {
      othersInCall = 0
      body()
      worst = max(worst, othersInCall)
    }
  }

  /// The subscriber's side: a value `value` (sent by `value / 1_000_000 - 1`) reaches the
  /// subscriber on the calling thread; if that thread is a sender in a call and the value is
  /// another sender's, it counts. Then ~5 µs of work.
  static func received(_ value: Int) {
    if let meter = CallMeter.current, value / 1_000_000 - 1 != meter.sender {
      meter.othersInCall += 1
    }
    let end = DispatchTime.now().uptimeNanoseconds + 5_000
    while DispatchTime.now().uptimeNanoseconds < end {}
  }

  static func value(_ sender: Int, _ index: Int) -> Int { (sender + 1) * 1_000_000 + index }

  static let perSender = max(500, stressScaled(4_000))

  /// Runs four senders, each calling `send(sender, value)` for its values; returns the largest
  /// count of others' values one call delivered.
  static func worstCall(_ send: @escaping @Sendable (Int, Int) -> Void) async -> Int? {
    let meters = (0..<4).map { CallMeter(sender: $0) }
    let shared = UncheckedSendable(meters)
    let returned = await allReturn(threads: 4) { sender in
      let meter = shared.value[sender]
      meter.install()
      for index in 0..<Self.perSender {
        meter.call { send(sender, Self.value(sender, index)) }
      }
    }
    guard returned else { return nil }
    let worst = meters.map(\.worst).max() ?? 0
    print("CallBoundTests: worst call delivered \(worst) values of others (bound \(bound))")
    return worst
  }

  static var bound: Int { DeliveryContext.allowancePerCall }

  @Test("subjects feeding merge")
  func subjectsIntoMerge() async {
    let a = PassthroughSubject<Int, Never>()
    let b = PassthroughSubject<Int, Never>()
    let sink = a.merge(with: b).sink { Self.received($0) }
    let worst = await Self.worstCall { sender, value in (sender < 2 ? a : b).send(value) }
    #expect(worst != nil, "every call returned")
    #expect((worst ?? .max) <= Self.bound, "worst call: \(worst ?? -1) values of others")
    withExtendedLifetime(sink) {}
  }

  @Test("a merge of merges")
  func mergeOfMerges() async {
    let subjects = (0..<4).map { _ in PassthroughSubject<Int, Never>() }
    let sink = subjects[0].merge(with: subjects[1])
      .merge(with: subjects[2].merge(with: subjects[3]))
      .sink { Self.received($0) }
    let worst = await Self.worstCall { sender, value in subjects[sender].send(value) }
    #expect(worst != nil, "every call returned")
    #expect((worst ?? .max) <= Self.bound, "worst call: \(worst ?? -1) values of others")
    withExtendedLifetime(sink) {}
  }

  @Test("flatMap over inner subjects, erased")
  func flatMapErased() async {
    let outer = PassthroughSubject<AnyPublisher<Int, Never>, Never>()
    let inners = (0..<2).map { _ in PassthroughSubject<Int, Never>() }
    let sink = outer.flatMap { $0 }.eraseToAnyPublisher().sink { Self.received($0) }
    for inner in inners { outer.send(inner.eraseToAnyPublisher()) }
    let worst = await Self.worstCall { sender, value in inners[sender % 2].send(value) }
    #expect(worst != nil, "every call returned")
    #expect((worst ?? .max) <= Self.bound, "worst call: \(worst ?? -1) values of others")
    withExtendedLifetime(sink) {}
  }

  @Test("combineLatest and zip")
  func fanIn() async {
    for kind in ["combineLatest", "zip"] {
      let a = PassthroughSubject<Int, Never>()
      let b = PassthroughSubject<Int, Never>()
      let combined: AnyPublisher<(Int, Int), Never> =
        kind == "zip" ? a.zip(b).eraseToAnyPublisher() : a.combineLatest(b).eraseToAnyPublisher()
      // Each send makes at most one combination, so of the combinations one call delivers, all
      // but one (its own, when its send made one) are other threads' work: every combination is
      // counted, and the bound allows the one that may be the caller's.
      let sink = combined.sink { _, _ in
        CallMeter.current?.othersInCall += 1
        let end = DispatchTime.now().uptimeNanoseconds + 5_000
        while DispatchTime.now().uptimeNanoseconds < end {}
      }
      let worst = await Self.worstCall { sender, value in (sender < 2 ? a : b).send(value) }
      #expect(worst != nil, "\(kind): every call returned")
      #expect((worst ?? .max) <= Self.bound + 1, "\(kind): worst call: \(worst ?? -1)")
      withExtendedLifetime(sink) {}
    }
  }

  @Test("share() with two subscribers, and multicast")
  func shared() async {
    let subject = PassthroughSubject<Int, Never>()
    let shared = subject.map { $0 }.share()
    let first = shared.sink { Self.received($0) }
    let second = shared.sink { _ in }
    let worstShared = await Self.worstCall { _, value in subject.send(value) }
    #expect(worstShared != nil, "share: every call returned")
    #expect((worstShared ?? .max) <= Self.bound, "share: worst call: \(worstShared ?? -1)")
    withExtendedLifetime((first, second)) {}

    let upstream = PassthroughSubject<Int, Never>()
    let multicast = upstream.multicast(subject: PassthroughSubject<Int, Never>())
    let sink = multicast.merge(with: PassthroughSubject<Int, Never>()).sink { Self.received($0) }
    let connection = multicast.connect()
    let worstMulticast = await Self.worstCall { _, value in upstream.send(value) }
    #expect(worstMulticast != nil, "multicast: every call returned")
    #expect((worstMulticast ?? .max) <= Self.bound, "multicast: worst: \(worstMulticast ?? -1)")
    withExtendedLifetime((sink, connection)) {}
  }

  @Test("a subject whose sink sends into a second subject (nested turns)")
  func nestedSubjects() async {
    let a = PassthroughSubject<Int, Never>()
    let b = PassthroughSubject<Int, Never>()
    let sinkB = b.sink { Self.received($0) }
    let sinkA = a.sink { b.send($0) }
    let worst = await Self.worstCall { _, value in a.send(value) }
    #expect(worst != nil, "every call returned")
    #expect((worst ?? .max) <= Self.bound, "worst call: \(worst ?? -1) values of others")
    withExtendedLifetime((sinkA, sinkB)) {}
  }
}
