// Package test support (`package` access: not part of the public API).

/// Values that carry their sender: `(sender + 1) * stride + index`, decoded by
/// ``sender(of:)`` and checked per sender by ``inOrderPerSender(_:)``.
///
/// The stride is 2^40, which no loop reaches: a sender that runs free until a consumer has what
/// it needs (on a loaded machine that can be minutes of sends when the cooperative pool is busy
/// elsewhere) stays in its own range. A stride of 10^6 did not: a sender past its millionth
/// value read as the next sender's, out of order (a CI run whose pool was held ~110 s by the
/// stress tests failed that way).
package enum SenderCoded {
  package static var stride: Int { 1 << 40 }

  /// Sender `sender`'s `index`th value.
  package static func value(sender: Int, index: Int) -> Int { (sender + 1) * stride + index }

  /// The sender of `value` (-1 for values below the first sender's range).
  package static func sender(of value: Int) -> Int { value / stride - 1 }

  /// Whether each sender's values in `values` strictly increase (each in order, none twice);
  /// values below the first sender's range are ignored.
  package static func inOrderPerSender(_ values: some Sequence<Int>) -> Bool {
    var last: [Int: Int] = [:]
    for value in values where value >= stride {
      let sender = sender(of: value)
      if let previous = last[sender], previous >= value { return false }
      last[sender] = value
    }
    return true
  }
}
