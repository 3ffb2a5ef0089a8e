import Dispatch
import SluiceCore

/// A publisher under test, made fresh for each subscription, with the values it must deliver.
struct PublisherCase: Sendable, CustomStringConvertible {
  let description: String
  let expected: [Int]
  let make: @Sendable () -> AnyPublisher<Int, Never>

  /// Every finite, cold publisher of this module, for the shared rule suite.
  static let all: [PublisherCase] = [
    PublisherCase(description: "Just", expected: [1]) { Just(1).eraseToAnyPublisher() },
    PublisherCase(description: "Sequence", expected: Array(1...20)) {
      (1...20).publisher.eraseToAnyPublisher()
    },
    PublisherCase(description: "Sequence(lazy map)", expected: [2, 4, 6, 8]) {
      [1, 2, 3, 4].lazy.map { $0 * 2 }.publisher.eraseToAnyPublisher()
    },
    PublisherCase(description: "Record", expected: [5, 6, 7]) {
      Record(output: [5, 6, 7], completion: .finished).eraseToAnyPublisher()
    },
    PublisherCase(description: "Optional.some", expected: [9]) {
      Optional(9).publisher.eraseToAnyPublisher()
    },
    PublisherCase(description: "Optional.none", expected: []) {
      Optional<Int>.none.publisher.eraseToAnyPublisher()
    },
    PublisherCase(description: "Result.success", expected: [3]) {
      Result<Int, Never>.success(3).publisher.eraseToAnyPublisher()
    },
    PublisherCase(description: "Empty", expected: []) { Empty().eraseToAnyPublisher() },
    PublisherCase(description: "Future(fulfilled)", expected: [4]) {
      Future { $0(.success(4)) }.eraseToAnyPublisher()
    },
    PublisherCase(description: "Future(fulfilled on another thread)", expected: [8]) {
      Future { promise in DispatchQueue.global().async { promise(.success(8)) } }
        .eraseToAnyPublisher()
    },
    PublisherCase(description: "Deferred", expected: [1, 2]) {
      Deferred { [1, 2].publisher }.eraseToAnyPublisher()
    },
    PublisherCase(description: "CurrentValueSubject(completed)", expected: []) {
      let subject = CurrentValueSubject<Int, Never>(0)
      subject.send(completion: .finished)
      return subject.eraseToAnyPublisher()
    },
  ]
}
