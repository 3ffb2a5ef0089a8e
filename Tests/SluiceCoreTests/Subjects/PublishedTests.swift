import SluiceCore
import SluiceTesting
import Testing

@Suite("@Published and ObservableObject")
struct PublishedTests {
  final class Weather: ObservableObject {
    @Published var temperature = 20
    @Published var sky = "clear"
    var log: [String] = []
  }

  class Base: ObservableObject {
    @Published var inherited = 0
  }

  final class Derived: Base {
    @Published var own = ""
  }

  final class Plain: ObservableObject {
    var value = 0
  }

  @Test func projectedPublisherSendsTheCurrentValueThenChanges() {
    let weather = Weather()
    let recorder = RecordingSubscriber<Int, Never>()
    weather.$temperature.subscribe(recorder)
    weather.temperature = 25
    weather.temperature = 30
    #expect(recorder.values == [20, 25, 30])
    #expect(recorder.events.first == .subscription("PublishedSubject"))
    #expect(weather.temperature == 30)
    recorder.cancel()
  }

  @Test func valuesArePublishedInWillSet() {
    let weather = Weather()
    let seen = Box<[String]>([])
    let cancellable = weather.$temperature.dropFirstValue().sink { new in
      seen.update { $0?.append("new \(new), stored \(weather.temperature)") }
    }
    weather.temperature = 21
    #expect(seen.value == ["new 21, stored 20"])
    cancellable.cancel()
  }

  @Test func objectWillChangeFiresBeforeAnyPublishedPropertyChanges() {
    let weather = Weather()
    let events = Box<[String]>([])
    let c1 = weather.objectWillChange.sink {
      events.update { $0?.append("will change (temperature \(weather.temperature))") }
    }
    let c2 = weather.$sky.sink { sky in events.update { $0?.append("sky \(sky)") } }
    weather.temperature = 22
    weather.sky = "cloudy"
    #expect(
      events.value == [
        "sky clear", "will change (temperature 20)", "will change (temperature 22)",
        "sky cloudy",
      ])
    #expect(weather.objectWillChange === weather.objectWillChange)
    _ = (c1, c2)
  }

  @Test func objectWillChangeCoversSuperclassProperties() {
    let derived = Derived()
    let count = Box<Int>(0)
    let cancellable = derived.objectWillChange.sink { count.update { $0! += 1 } }
    derived.inherited = 1
    derived.own = "x"
    #expect(count.value == 2)
    cancellable.cancel()
  }

  @Test func anObjectWithoutPublishedPropertiesStillHasAPublisher() {
    let recorder = RecordingSubscriber<Void, Never>()
    Plain().objectWillChange.subscribe(recorder)
    #expect(recorder.subscriptionCount == 1)
    recorder.cancel()
  }

  @Test func assignToPublishedLivesAsLongAsTheObject() {
    let subject = PassthroughSubject<Int, Never>()
    weak var weakWeather: Weather?
    do {
      let weather = Weather()
      weakWeather = weather
      subject.assign(to: &weather.$temperature)
      subject.send(5)
      #expect(weather.temperature == 5)
    }
    #expect(weakWeather == nil, "assign(to:) does not keep the object alive")
    subject.send(6)  // nobody left: harmless
  }

  @Test func observableObjectPublisherDemandIsOnOff() {
    let publisher = ObservableObjectPublisher()
    let recorder = RecordingSubscriber<Void, Never>(initialDemand: .none)
    publisher.subscribe(recorder)
    publisher.send()
    #expect(recorder.values.isEmpty, "before any request nothing is delivered, nor kept")
    recorder.request(.max(1))
    #expect(recorder.values.isEmpty)
    publisher.send()
    publisher.send()
    publisher.send()
    #expect(recorder.values.count == 3, "after the first request every send() is delivered")
    #expect(
      recorder.events.first.map(String.init(describing:))
        == "subscription(ObservableObjectPublisher)")
    recorder.cancel()
  }
}

extension Publisher where Failure == Never {
  /// Skips the first value: here only to observe `@Published`'s willSet timing.
  fileprivate func dropFirstValue() -> AnyPublisher<Output, Never> {
    let first = Box<Bool>(true)
    return AnyPublisher(
      DropFirstValue(upstream: self, first: first))
  }
}

private struct DropFirstValue<Upstream: Publisher>: Publisher where Upstream.Failure == Never {
  typealias Output = Upstream.Output
  typealias Failure = Never
  let upstream: Upstream
  let first: Box<Bool>

  func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Never {
    upstream.subscribe(
      AnySubscriber<Output, Never>(
        receiveSubscription: { subscriber.receive(subscription: $0) },
        receiveValue: { value in
          if first.value == true {
            first.set(false)
            return .max(1)
          }
          return subscriber.receive(value)
        },
        receiveCompletion: { subscriber.receive(completion: $0) }))
  }
}
