import Foundation
import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Testing

/// `Timer.publish` and `NotificationCenter.publisher(for:object:)`.
@Suite("Foundation publishers", .onThreadsOfTheirOwn)
struct FoundationPublisherTests {
  @Test func notificationsReachASubscriberWithDemandUntilItCancels() throws {
    let center = NotificationCenter()
    let name = Notification.Name("sluice.test")
    let sender = NSObject()
    let recorder = RecordingSubscriber<Notification, Never>(initialDemand: .max(2))
    center.publisher(for: name, object: sender).subscribe(recorder)
    let subscription = try #require(recorder.subscription)
    #expect(String(describing: subscription) == "NotificationCenter Observer")
    #expect(mirrorLabels(subscription) == ["center", "name", "object", "demand"])
    center.post(name: name, object: sender)
    center.post(name: name, object: NSObject())  // another object: not observed
    center.post(name: name, object: sender)
    center.post(name: name, object: sender)  // no demand left: not delivered
    #expect(recorder.values.count == 2)
    recorder.request(.max(5))
    recorder.cancel()
    center.post(name: name, object: sender)
    #expect(recorder.values.count == 2)
    #expect(center.publisher(for: name) == center.publisher(for: name))
    #expect(center.publisher(for: name) != NotificationCenter.default.publisher(for: name))
  }

  @Test func notificationsPostedFromManyThreadsStaySerial() async {
    let center = NotificationCenter()
    let name = Notification.Name("sluice.concurrent")
    let checker = RuleChecker()
    let recorder = RecordingSubscriber<Int, Never>()
    center.publisher(for: name).map { $0.userInfo?["n"] as? Int ?? -1 }.checkingRules(checker)
      .subscribe(recorder)
    await concurrently(4) { thread in
      for index in 0..<500 { center.post(name: name, object: nil, userInfo: ["n": index]) }
    }
    #expect(recorder.values.count == 2_000)
    #expect(checker.violations.isEmpty, "\(checker.violations)")
    recorder.cancel()
  }

  @Test func theTimerTicksWhileConnected() throws {
    let runLoop = RunLoop.current
    let timer = Timer.publish(every: 0.01, on: runLoop, in: .default)
    let recorder = RecordingSubscriber<Date, Never>()
    timer.subscribe(recorder)
    runLoop.run(until: Date().addingTimeInterval(0.05))
    #expect(recorder.values.isEmpty, "nothing before connect()")
    let connection = timer.connect()
    let deadline = Date().addingTimeInterval(10)
    while recorder.values.count < 3, Date() < deadline {
      runLoop.run(until: Date().addingTimeInterval(0.01))
    }
    connection.cancel()
    let ticks = recorder.values
    #expect(ticks.count >= 3)
    #expect(ticks == ticks.sorted())
    runLoop.run(until: Date().addingTimeInterval(0.05))
    #expect(recorder.values.count == ticks.count, "no tick after the connection is cancelled")
    #expect(timer.interval == 0.01)
    recorder.cancel()
  }

  /// The ticks run in the mode the publisher was made for, also a mode of the caller's own (the
  /// run loop's one wake-up timer for that mode re-arms in it after each tick).
  @Test func theTimerTicksInACustomMode() {
    let runLoop = RunLoop.current
    let mode = RunLoop.Mode("sluice.custom")
    let recorder = RecordingSubscriber<Date, Never>()
    Timer.publish(every: 0.005, on: runLoop, in: mode).autoconnect().subscribe(recorder)
    let deadline = Date().addingTimeInterval(600)
    while recorder.values.count < 5, Date() < deadline {
      _ = runLoop.run(mode: mode, before: Date().addingTimeInterval(0.05))
    }
    #expect(recorder.values.count >= 5)
    _ = runLoop.run(mode: .default, before: Date().addingTimeInterval(0.05))
    let ticked = recorder.values.count
    _ = runLoop.run(mode: .default, before: Date().addingTimeInterval(0.05))
    #expect(recorder.values.count == ticked, "not in another mode")
    recorder.cancel()
  }
}
