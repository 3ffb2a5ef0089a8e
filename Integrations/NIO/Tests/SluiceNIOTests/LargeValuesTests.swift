import Foundation
import NIOCore
import Sluice
import SluiceNIO
import Testing

/// Values of several kilobytes, several clients at once, unlimited demand: a batch fills on a
/// value while the thread delivering still owes some, the write that lifts the stall starts a
/// request call on another thread, and that call returned at once (the thread already
/// delivering took its demand) and handed over the frames being encoded by the other: the
/// server trapped ("a payload of -5010 bytes does not fit the 4-byte length field") or sent
/// corrupt frames, and a client received a wrong value as if it were valid.
@Suite("Large values to several clients arrive intact", .serialized)
struct LargeValuesTests {
  /// What the server's `--blob-bytes` mode sends as value `index`.
  static func blob(index: Int, size: Int) -> ByteBuffer {
    var buffer = ByteBuffer()
    while buffer.readableBytes + 8 <= size { buffer.writeInteger(UInt64(index)) }
    buffer.writeRepeatingByte(UInt8(truncatingIfNeeded: index), count: size - buffer.readableBytes)
    return buffer
  }

  /// Every value a client received, and how it ended.
  final class Collector: @unchecked Sendable {
    // Safety: every mutable property is read and written only under `lock`.
    private let lock = NSLock()
    private var values: [ByteBuffer] = []
    private var ending: Subscribers.Completion<RemotePipelineError>?
    private var cancellable: AnyCancellable?

    init(_ pipeline: RemotePipeline<ByteBuffer>) {
      let token = pipeline.sink(
        receiveCompletion: { [self] completion in lock.withLock { ending = completion } },
        receiveValue: { [self] value in lock.withLock { values.append(value) } })
      lock.withLock { cancellable = token }
    }

    var received: [ByteBuffer] { lock.withLock { values } }
    var completion: Subscribers.Completion<RemotePipelineError>? { lock.withLock { ending } }
    func cancel() { lock.withLock { cancellable.take() }?.cancel() }
  }

  @Test(arguments: [5_000, 9_000, 20_000])
  func everyByteOfEveryValueArrives(size: Int) async throws {
    let count = 400
    let server = try await ServerProcess([
      "--blob-bytes", "\(size)", "--count", "\(count)",
    ])
    let port = try #require(server.port)
    let expected = (0..<count).map { Self.blob(index: $0, size: size) }
    for round in 0..<6 {
      let clients = (0..<4).map { _ in
        Collector(RemotePipeline<ByteBuffer>(port: port))
      }
      defer { clients.forEach { $0.cancel() } }
      #expect(await eventually(within: 60) { clients.allSatisfy { $0.completion != nil } })
      for client in clients {
        guard case .finished? = client.completion else {
          Issue.record("round \(round): \(String(describing: client.completion))")
          continue
        }
        let received = client.received
        #expect(received.count == count, "round \(round)")
        let wrong = zip(received, expected).enumerated().first { $0.element.0 != $0.element.1 }
        #expect(wrong == nil, "round \(round): value \(wrong?.offset ?? -1) differs")
      }
      #expect(server.isRunning, "the server is alive after round \(round)")
      if !server.isRunning { return }
    }
  }
}
