import SluiceCore
import SluiceTesting
import Testing

/// What `print` and debuggers show: Combine's strings, for every subscription and subscriber.
@Suite("Descriptions")
struct DescriptionTests {
  /// The subscription a publisher hands its subscriber.
  private static func subscription<P: Publisher>(of publisher: P) -> any Subscription
  where P.Output == Int {
    let subscription = Box<any Subscription>()
    publisher.subscribe(
      AnySubscriber<Int, P.Failure>(receiveSubscription: { subscription.set($0) }))
    return subscription.value!
  }

  final class Model: ObservableObject { @Published var value = 0 }

  static var cases: [(String, any Subscription)] {
    [
      ("Just", subscription(of: Just(1))),
      ("Once", subscription(of: Result<Int, Never>.success(1).publisher)),
      ("Optional", subscription(of: Optional(1).publisher)),
      ("[1, 2]", subscription(of: [1, 2].publisher)),
      ("[3]", subscription(of: Record<Int, Never>(output: [3], completion: .finished))),
      ("Empty", subscription(of: Empty<Int, Never>())),
      ("Future", subscription(of: Future<Int, Never> { _ in })),
      ("PassthroughSubject", subscription(of: PassthroughSubject<Int, Never>())),
      ("CurrentValueSubject", subscription(of: CurrentValueSubject<Int, Never>(0))),
      ("PublishedSubject", subscription(of: Model().$value)),
    ]
  }

  /// `dump` shows a subscription's Combine children and nothing of Sluice's internals (the
  /// stored functions of a subject's conduit's or a future's subscription's base class).
  @Test(arguments: 0..<10)
  func dumpShowsNoInternalStorage(_ index: Int) {
    let cases = Self.cases
    defer { for (_, subscription) in cases { subscription.cancel() } }
    let (name, subscription) = cases[index]
    var dumped = ""
    dump(subscription, to: &dumped)
    #expect(!dumped.contains("(Function)") && !dumped.contains("super:"), "\(name):\n\(dumped)")
  }

  @Test(arguments: 0..<10)
  func subscriptionDescriptions(_ index: Int) {
    let cases = Self.cases
    // Nothing completes these subscriptions: the test ends them.
    defer { for (_, subscription) in cases { subscription.cancel() } }
    let (expected, subscription) = cases[index]
    #expect(String(describing: subscription) == expected)
    #expect(
      (subscription as? any CustomPlaygroundDisplayConvertible)?.playgroundDescription
        as? String == expected)
  }

  @Test func everySubscriptionCaseIsChecked() {
    let cases = Self.cases
    defer { for (_, subscription) in cases { subscription.cancel() } }
    #expect(cases.count == 10, "update the arguments range of subscriptionDescriptions")
  }

  @Test func subscriberDescriptions() {
    final class Target { var value = 0 }
    let sink = Subscribers.Sink<Int, Never>(receiveCompletion: { _ in }, receiveValue: { _ in })
    let assign = Subscribers.Assign(object: Target(), keyPath: \.value)
    let anonymous = AnySubscriber<Int, Never>()
    let subject = AnySubscriber(PassthroughSubject<Int, Never>())
    #expect(String(describing: sink) == "Sink")
    #expect(String(describing: assign) == "Assign Target.")
    #expect(String(describing: anonymous) == "Anonymous AnySubscriber")
    #expect(String(describing: subject) == "Subject")
    #expect(String(describing: AnySubscriber(sink)) == "Sink")
    #expect(AnySubscriber(sink).playgroundDescription as? String == "Sink")
    #expect(String(describing: Subscriptions.empty) == "Empty")
  }
}
