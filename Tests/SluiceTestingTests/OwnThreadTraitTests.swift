import Foundation
import SluiceTestSupport
import Testing

/// The trait that keeps blocking tests off the cooperative pool runs them where it says.
@Suite("OwnThreadTrait: blocking tests run on a thread of their own")
struct OwnThreadTraitTests {
  @Test("a synchronous test runs on the trait's thread", .onThreadsOfTheirOwn)
  func synchronousTest() {
    #expect(OwnThreadExecutor.isCurrentThread)
  }

  @Test(
    "an async test stays on it across suspensions, and its child tasks run there",
    .onThreadsOfTheirOwn)
  func asyncTest() async {
    #expect(onOwnThread())
    try? await Task.sleep(for: .milliseconds(1))
    #expect(onOwnThread())
    async let child = onOwnThread()
    #expect(await child)
  }

  @Test("without the trait a test runs on the pool")
  func withoutTheTrait() async {
    #expect(!onOwnThread())
  }
}

/// `OwnThreadExecutor.isCurrentThread`, from `async` code.
private func onOwnThread() -> Bool { OwnThreadExecutor.isCurrentThread }
