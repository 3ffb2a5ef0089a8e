import Foundation
import Sluice
import SluiceNetworking
import SluiceTestSupport
import SluiceTesting
import Testing
import URLSessionExamples

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// `URLSession.DataTaskPublisher`, against real `URLSession` tasks answered by ``StubProtocol``.
@Suite("URLSession.DataTaskPublisher", .onThreadsOfTheirOwn)
final class DataTaskPublisherTests {
  let session = StubProtocol.session()

  /// A session lives until it is invalidated (it and its tasks keep each other): each test's
  /// goes with the test.
  deinit { session.invalidateAndCancel() }

  func url(_ path: String) -> URL { URL(string: "stub://test.\(UUID().uuidString)/\(path)")! }

  /// The task the subscription runs, from its mirror (`nil` before the first request and after
  /// it ends).
  func task(of recorder: RecordingSubscriber<(data: Data, response: URLResponse), URLError>)
    -> URLSessionDataTask?
  {
    guard let subscription = recorder.subscription else { return nil }
    return Mirror(reflecting: subscription).children.first { $0.label == "task" }?.value
      as? URLSessionDataTask
  }

  /// Polls `condition` until it holds, for up to ten minutes: a deadline against hangs only
  /// (the session calls back on its own queue; a loaded sanitizer run is slow).
  func eventually(_ condition: () -> Bool) async throws {
    for _ in 0..<120_000 where !condition() { try await Task.sleep(for: .milliseconds(5)) }
  }

  @Test func publishesTheBodyAndResponseThenFinishes() async throws {
    let url = url("ok/hello")
    let recorder = RecordingSubscriber<(data: Data, response: URLResponse), URLError>()
    let checker = RuleChecker()
    session.dataTaskPublisher(for: url).checkingRules(checker).subscribe(recorder)
    await recorder.waitForCompletion()
    #expect(recorder.values.count == 1)
    let (data, response) = try #require(recorder.values.first)
    #expect(String(decoding: data, as: UTF8.self) == "hello")
    #expect((response as? HTTPURLResponse)?.statusCode == 200)
    #expect(response.url == url)
    #expect(recorder.completion == .finished)
    #expect(checker.violations.isEmpty)
    #expect(StubProtocol.counts(for: url).started == 1)
  }

  @Test(
    "a result that arrives while the subscriber is still in receive(subscription:) waits for it")
  func aResultDuringReceiveSubscriptionWaitsForItToReturn() async throws {
    let url = url("ok/hello")
    let attacher = SlowAttacher(session: session)
    session.dataTaskPublisher(for: url).subscribe(attacher)
    try await eventually { attacher.events.count == 3 }
    #expect(attacher.sawTheTaskComplete, "the task finished while receive(subscription:) ran")
    #expect(attacher.events == ["attached", "value", "finished"])
  }

  @Test func describesItselfAsCombineDoes() throws {
    let recorder = RecordingSubscriber<(data: Data, response: URLResponse), URLError>(
      initialDemand: .none)
    let publisher = session.dataTaskPublisher(for: URLRequest(url: url("hang")))
    #expect(publisher.session === session)
    #expect(publisher.request.url?.lastPathComponent == "hang")
    publisher.subscribe(recorder)
    let subscription = try #require(recorder.subscription)
    #expect(String(describing: subscription) == "DataTaskPublisher")
    let labels = Mirror(reflecting: subscription).children.map(\.label)
    #expect(labels == ["task", "downstream", "parent", "demand"])
    recorder.cancel()
  }

  @Test func startsTheTaskOnTheFirstRequestOnly() async throws {
    let url = url("ok/lazy")
    let recorder = RecordingSubscriber<(data: Data, response: URLResponse), URLError>(
      initialDemand: .none)
    session.dataTaskPublisher(for: url).subscribe(recorder)
    #expect(task(of: recorder) == nil)  // no task until the first request
    #expect(StubProtocol.counts(for: url).started == 0)
    #expect(recorder.values.isEmpty)
    recorder.request(.max(1))
    // Created and resumed inside the request; the stub may answer (and the subscription let go
    // of its finished task) before this line runs, so either is proof — and neither ever comes
    // if the request started nothing. (Checked at once, it failed on a loaded sanitizer run.)
    try await eventually { task(of: recorder) != nil || recorder.completion != nil }
    #expect(task(of: recorder) != nil || recorder.completion != nil)
    recorder.request(.max(3))  // a second request does not start a second task
    await recorder.waitForCompletion()
    #expect(StubProtocol.counts(for: url).started == 1)
    #expect(recorder.values.count == 1)
  }

  @Test func everySubscriptionLoadsAgain() async throws {
    let url = url("ok/twice")
    let publisher = session.dataTaskPublisher(for: url).map(\.data)
    let first = try await publisher.firstValue()
    let second = try await publisher.firstValue()
    #expect(first == second)
    #expect(StubProtocol.counts(for: url).started == 2)
  }

  @Test func aURLErrorFailsThePublisher() async {
    let url = url("fail/offline")
    let recorder = RecordingSubscriber<(data: Data, response: URLResponse), URLError>()
    session.dataTaskPublisher(for: url).subscribe(recorder)
    await recorder.waitForCompletion()
    #expect(recorder.values.isEmpty)
    guard case .failure(let error) = recorder.completion else {
      Issue.record("expected a failure, got \(String(describing: recorder.completion))")
      return
    }
    #expect(error.code == .notConnectedToInternet)
  }

  @Test func cancellingStopsTheTaskAndDeliversNothing() async throws {
    let url = url("hang")
    let recorder = RecordingSubscriber<(data: Data, response: URLResponse), URLError>()
    session.dataTaskPublisher(for: url).subscribe(recorder)
    try await eventually { StubProtocol.counts(for: url).started == 1 }
    #expect(StubProtocol.counts(for: url).started == 1)
    let running = try #require(task(of: recorder))
    recorder.cancel()
    recorder.cancel()
    try await eventually { StubProtocol.counts(for: url).stopped == 1 }
    #expect(StubProtocol.counts(for: url).stopped == 1)
    try await eventually { running.state == .completed }  // its handler has had its turn
    // Not even the task's `.cancelled` error reaches the subscriber.
    #expect(recorder.events.count == 1)
  }

  @Test func cancellingBeforeTheFirstRequestNeverLoads() async throws {
    let url = url("ok/never")
    let recorder = RecordingSubscriber<(data: Data, response: URLResponse), URLError>(
      initialDemand: .none)
    session.dataTaskPublisher(for: url).subscribe(recorder)
    recorder.cancel()
    recorder.request(.max(1))
    #expect(task(of: recorder) == nil)  // the request after cancel() created no task
    #expect(StubProtocol.counts(for: url).started == 0)
    #expect(recorder.events.count == 1)
  }

  @Test func concurrentRequestsAndCancelsStartAtMostOneTask() async throws {
    // Tasks that only cancellation ends: FoundationNetworking traps when a task is cancelled
    // while it completes through a custom `URLProtocol` (its bug, not this publisher's).
    let session = TaskTrackingSession()
    defer { session.end() }
    for round in 0..<50 {
      let url = url("hang/\(round)")
      let checker = RuleChecker()
      let recorder = RecordingSubscriber<(data: Data, response: URLResponse), URLError>(
        initialDemand: .none)
      session.dataTaskPublisher(for: url).checkingRules(checker).subscribe(recorder)
      DispatchQueue.concurrentPerform(iterations: 8) { thread in
        if thread == 5 { recorder.cancel() } else { recorder.request(.max(1)) }
      }
      recorder.cancel()
      // The counts are final once every task made for this URL has completed (a cancelled task
      // completes after its protocol's `stopLoading`, which follows its `startLoading`). Waiting
      // for the counts to be equal instead saw 0 = 0 before a start and its stop arrived.
      let tasks = session.tasks(for: url)
      #expect(tasks.count <= 1)
      try await eventually { tasks.allSatisfy { $0.state == .completed } }
      #expect(tasks.allSatisfy { $0.state == .completed }, "no task left suspended or running")
      let counts = StubProtocol.counts(for: url)
      #expect(counts.started <= 1)
      #expect(counts.stopped == counts.started)  // a task that started was cancelled
      #expect(recorder.values.isEmpty)
      #expect(recorder.events.count == 1)
      #expect(checker.violations.isEmpty)
    }
  }

  /// A cancel that comes while the subscription is creating its task (here: from inside the
  /// session's `dataTask`) stops that task: it was resumed first and is cancelled then, never
  /// left suspended in the session (which would keep it, its handler and the subscription).
  @Test func aCancelWhileTheTaskIsCreatedStopsIt() async throws {
    let url = url("hang/created")
    let recorder = RecordingSubscriber<(data: Data, response: URLResponse), URLError>(
      initialDemand: .none)
    let session = TaskTrackingSession(onCreate: { recorder.cancel() })
    defer { session.end() }
    session.dataTaskPublisher(for: url).subscribe(recorder)
    recorder.request(.max(1))
    let task = try #require(session.tasks(for: url).first)
    try await eventually { task.state == .completed }
    #expect(task.state == .completed)
    let counts = StubProtocol.counts(for: url)
    #expect(counts.started == counts.stopped)
    #expect(recorder.events.count == 1)
  }

  @Test func awaitedAsAnAppWould() async throws {
    actor Loader {
      let session: URLSession
      var texts: [String] = []
      init(session: URLSession) { self.session = session }
      func load(_ url: URL) async throws {
        for try await text in session.dataTaskPublisher(for: url)
          .map({ String(decoding: $0.data, as: UTF8.self) })
          .replaceError(with: "offline")
          .values
        {
          texts.append(text)
        }
      }
    }
    let loader = Loader(session: session)
    try await loader.load(url("ok/first"))
    try await loader.load(url("fail/offline"))
    #expect(await loader.texts == ["first", "offline"])
  }
}

/// Requests inside `receive(subscription:)`, then stays there until the session has finished the
/// task and run its completion handler, logging what arrives when.
final class SlowAttacher: Subscriber, @unchecked Sendable {
  // Safety: `log` and `completedInside` are guarded by `lock`.
  let lock = NSLock()
  private var log: [String] = []
  private var completedInside = false

  let session: URLSession
  init(session: URLSession) { self.session = session }

  var events: [String] { lock.withLock { log } }
  var sawTheTaskComplete: Bool { lock.withLock { completedInside } }

  func receive(subscription: any Subscription) {
    subscription.request(.unlimited)
    let task =
      Mirror(reflecting: subscription).children.first { $0.label == "task" }?.value
      as? URLSessionDataTask
    // Up to a minute: on a loaded machine the session's queue may take seconds to run it.
    for _ in 0..<60_000 where task?.state != .completed { usleep(1_000) }
    let completed = task?.state == .completed
    // The completion handler runs on the session's serial delegate queue: once an operation
    // added after it has run, so has the handler.
    session.delegateQueue.addOperation {}
    session.delegateQueue.waitUntilAllOperationsAreFinished()
    lock.withLock {
      completedInside = completed
      log.append("attached")
    }
  }

  func receive(_ input: (data: Data, response: URLResponse)) -> Subscribers.Demand {
    lock.withLock { log.append("value") }
    return .none
  }

  func receive(completion: Subscribers.Completion<URLError>) {
    lock.withLock { log.append(completion == .finished ? "finished" : "failed") }
  }
}

/// The URLSession example (Examples/URLSessionExamples) prints what it shows.
@Suite("URLSession example")
struct URLSessionExampleTests {
  @Test func theExamplePrintsWhatItShows() async {
    #expect(
      await urlSessionTour() == [
        "dataTaskPublisher → decode → firstValue(): oslo -3.5°C",
        "an unknown city fails after one retry: URLError",
        "flatMap(maxPublishers: .max(2)) over sluice.dataTaskPublisher: [\"lima\", \"cairo\", \"oslo\"]",
      ])
  }
}

/// A session answered by ``StubProtocol`` that keeps every data task it makes (by URL) and runs
/// `onCreate` right after making one, before returning it.
///
/// Like every `URLSession`, it lives until it is invalidated (with its queues, its tasks and
/// what `onCreate` captured): a test ends it with ``end()``.
final class TaskTrackingSession: URLSession, @unchecked Sendable {
  // Safety: `made` is guarded by `lock`; `onCreate` is set once.
  private let lock = NSLock()
  private var made: [String: [URLSessionDataTask]] = [:]
  private let onCreate: @Sendable () -> Void

  init(onCreate: @escaping @Sendable () -> Void = {}) {
    self.onCreate = onCreate
    let configuration = URLSessionConfiguration.ephemeral
    configuration.protocolClasses = [StubProtocol.self]
    super.init(configuration: configuration)
  }

  func tasks(for url: URL) -> [URLSessionDataTask] {
    lock.withLock { made[url.absoluteString] ?? [] }
  }

  /// Invalidates the session (cancelling what still runs) and forgets its tasks, which refer
  /// to it.
  func end() {
    invalidateAndCancel()
    lock.withLock { made = [:] }
  }

  override func dataTask(
    with request: URLRequest,
    completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
  ) -> URLSessionDataTask {
    let task = super.dataTask(with: request, completionHandler: completionHandler)
    lock.withLock { made[request.url?.absoluteString ?? "", default: []].append(task) }
    onCreate()
    return task
  }
}
