import NIOCore
import NIOEmbedded
import Testing

@testable import SluiceNIO

/// The tags of the frames a writer wrote to `channel` so far, in order (read and consumed).
func writtenFrameTags(_ channel: EmbeddedChannel) throws -> [WireFrame.Tag] {
  var bytes = ByteBuffer()
  while var part = try channel.readOutbound(as: ByteBuffer.self) { bytes.writeBuffer(&part) }
  var tags: [WireFrame.Tag] = []
  while let length = bytes.readInteger(as: UInt32.self) {
    let tag = try #require(bytes.readInteger(as: UInt8.self).flatMap(WireFrame.Tag.init))
    tags.append(tag)
    bytes.moveReaderIndex(forwardBy: Int(length) - 1)
  }
  return tags
}
