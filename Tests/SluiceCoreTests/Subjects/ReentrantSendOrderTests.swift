import Testing

@testable import SluiceCore

/// A send from inside a subscriber's `receive` is queued: it reaches every subscriber after the
/// value being delivered, so every subscriber receives the subject's values in one order (the
/// order the sends were made in), never nested.
@Suite("Subjects: a send from inside receive reaches every subscriber after the value in flight")
struct ReentrantSendOrderTests {
  @Test("PassthroughSubject: every subscriber receives the values in one order")
  func passthroughOneOrder() {
    let subject = PassthroughSubject<Int, Never>()
    var a: [Int] = []
    var b: [Int] = []
    let first = subject.sink { value in
      a.append(value)
      if value < 3 { subject.send(value + 10) }
    }
    let second = subject.sink { b.append($0) }
    subject.send(1)
    subject.send(2)
    #expect(a == [1, 11, 2, 12])
    #expect(b == [1, 11, 2, 12])
    withExtendedLifetime((first, second)) {}
  }

  @Test("CurrentValueSubject: a subscriber that clamps the value leaves the others on the clamp")
  func currentValueClamp() {
    let subject = CurrentValueSubject<Int, Never>(0)
    var shown: [Int] = []
    let clamp = subject.sink { if $0 == 1 { subject.value = 2 } }
    let label = subject.sink { shown.append($0) }
    subject.value = 1
    #expect(subject.value == 2)
    #expect(shown == [0, 1, 2])
    #expect(shown.last == subject.value, "the label shows the subject's value")
    withExtendedLifetime((clamp, label)) {}
  }

  @Test("a chain of sends from inside receive is delivered breadth first, in send order")
  func chainedSends() {
    let subject = PassthroughSubject<Int, Never>()
    var log: [String] = []
    let first = subject.sink { value in
      log.append("first \(value)")
      if value == 1 {
        subject.send(2)
        subject.send(3)
      }
      if value == 2 { subject.send(4) }
    }
    let second = subject.sink { log.append("second \($0)") }
    subject.send(1)
    #expect(
      log == [
        "first 1", "second 1", "first 2", "second 2", "first 3", "second 3", "first 4",
        "second 4",
      ])
    withExtendedLifetime((first, second)) {}
  }

  @Test("a completion from inside receive reaches every subscriber after the value in flight")
  func completionFromInsideReceive() {
    let subject = PassthroughSubject<Int, Never>()
    var log: [String] = []
    let first = subject.sink(
      receiveCompletion: { _ in log.append("first finished") },
      receiveValue: { value in
        log.append("first \(value)")
        subject.send(completion: .finished)
      })
    let second = subject.sink(
      receiveCompletion: { _ in log.append("second finished") },
      receiveValue: { log.append("second \($0)") })
    subject.send(1)
    subject.send(2)  // after completion: ignored
    #expect(log == ["first 1", "second 1", "first finished", "second finished"])
    withExtendedLifetime((first, second)) {}
  }
}
