import SluiceAsync
import SluiceCore
import SluiceTesting
import Testing

/// Hot publishers — subjects, `@Published`, operator chains over them — are bridged losslessly
/// by default; cold publishers keep Combine's demand of one value per `next()`.
@Suite("Lossless bridging of hot publishers")
struct HotPublisherTests {
  @MainActor final class SearchModel: ObservableObject {
    @Published var query = ""
  }

  @Test @MainActor func forAwaitOverPublishedSeesEveryAssignment() async {
    let model = SearchModel()
    var seen: [String] = []
    for await query in model.$query.values {
      seen.append(query)
      if query.isEmpty {
        // Assigned while the loop body runs, as a view's actions would.
        for next in ["a", "b", "c"] { model.query = next }
      }
      if seen.count == 4 { break }
    }
    #expect(seen == ["", "a", "b", "c"])
  }

  @Test func operatorChainsOverHotSourcesAreHot() {
    let subject = PassthroughSubject<Int, Never>()
    let model = SearchModelHolder()
    #expect(subject.map { $0 * 2 }.filter { $0 > 2 }.isHotPublisher)
    #expect(
      subject.removeDuplicates().debounce(for: .seconds(1), scheduler: ImmediateScheduler.shared)
        .isHotPublisher)
    #expect(subject.merge(with: subject.map { $0 + 1 }).isHotPublisher)
    #expect(subject.combineLatest(CurrentValueSubject<Int, Never>(0)).isHotPublisher)
    #expect(subject.map { $0 }.eraseToAnyPublisher().isHotPublisher)
    #expect(subject.share().isHotPublisher)
    #expect(model.objectWillChange.isHotPublisher)
    // Cold: sources that send when asked, and chains that mix one in.
    #expect(![1, 2].publisher.map { $0 }.isHotPublisher)
    #expect(!Just(1).eraseToAnyPublisher().isHotPublisher)
    #expect(!subject.merge(with: [1].publisher).isHotPublisher)
    #expect(!subject.flatMap { Just($0) }.isHotPublisher)
  }

  final class SearchModelHolder: ObservableObject, @unchecked Sendable {
    // Safety: only read in one test.
    @Published var text = ""
  }

  @Test func aChainOverASubjectKeepsEveryValueWhileTheConsumerIsBusy() async {
    let subject = PassthroughSubject<Int, Never>()
    var iterator = subject.map { $0 * 10 }.filter { $0 != 20 }.values.makeAsyncIterator()
    for value in 1...5 { subject.send(value) }
    subject.send(completion: .finished)
    var seen: [Int] = []
    while let value = await iterator.next() { seen.append(value) }
    #expect(seen == [10, 30, 40, 50])
  }

  @Test func streamAndAnErasedChainAreLosslessToo() async {
    let subject = PassthroughSubject<Int, Never>()
    let stream = subject.map { $0 + 1 }.eraseToAnyPublisher().stream()
    for value in 1...4 { subject.send(value) }
    subject.send(completion: .finished)
    var seen: [Int] = []
    for await value in stream { seen.append(value) }
    #expect(seen == [2, 3, 4, 5])
  }

  @Test func coldPublishersKeepDemandOne() async {
    let upstream = TestPublisher<Int, Never>()
    var iterator = upstream.map { $0 }.values.makeAsyncIterator()
    let reader = Task { await iterator.next() }
    #expect(await eventually { upstream.subscriptions.first?.requests == [.max(1)] })
    upstream.send(1)
    #expect(await reader.value == 1)
  }
}
