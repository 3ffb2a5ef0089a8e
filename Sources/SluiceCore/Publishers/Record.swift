/// A publisher that allows for recording a series of inputs and a completion, for later
/// playback to each subscriber, as in Combine.
///
/// ![Marble diagram: Record(output: ("a", "b", "c"), completion: .finished)](record)
///
/// **Demand**: exactly as requested; the completion follows the last value at once. A recording
/// with no values sends `Subscriptions.empty` and its completion at once. **Cancellation**:
/// playback stops; the subscription's description becomes `"Cancelled Events"`.
public struct Record<Output, Failure: Error>: Publisher {
  /// The recorded output and completion.
  public let recording: Recording

  /// Creates a publisher that plays back what `record` records.
  public init(record: (inout Recording) -> Void) {
    var recording = Recording()
    record(&recording)
    self.init(recording: recording)
  }

  /// Creates a publisher that plays back `recording`.
  public init(recording: Recording) {
    self.recording = recording
  }

  /// Creates a publisher that plays back `output`, then `completion`.
  public init(output: [Output], completion: Subscribers.Completion<Failure>) {
    self.init(recording: Recording(output: output, completion: completion))
  }

  @inlinable
  public func receive<S: Subscriber>(subscriber: S)
  where Output == S.Input, Failure == S.Failure {
    RecordSource(output: recording.output, completion: recording.completion).subscribe(subscriber)
  }

  /// A recorded sequence of outputs, followed by a completion.
  ///
  /// `receive(_:)` after `receive(completion:)`, or a second `receive(completion:)`, traps.
  public struct Recording {
    /// The type of the values recorded.
    public typealias Input = Output

    /// The output recorded so far.
    public private(set) var output: [Output]

    /// The completion; `.finished` until another is recorded.
    public private(set) var completion: Subscribers.Completion<Failure>

    private var isComplete: Bool

    /// Creates an empty, open recording.
    public init() {
      output = []
      completion = .finished
      isComplete = false
    }

    /// Creates a complete recording of `output` and `completion`.
    public init(output: [Output], completion: Subscribers.Completion<Failure> = .finished) {
      self.output = output
      self.completion = completion
      isComplete = true
    }

    /// Records an output.
    public mutating func receive(_ input: Input) {
      if isComplete { Violation.recordingValueAfterCompletion() }
      output.append(input)
    }

    /// Records the completion.
    public mutating func receive(completion: Subscribers.Completion<Failure>) {
      if isComplete { Violation.recordingCompletedTwice() }
      self.completion = completion
      isComplete = true
    }
  }
}

extension Record: Codable where Output: Codable, Failure: Codable {}

extension Record.Recording: Codable where Output: Codable, Failure: Codable {
  private enum CodingKeys: String, CodingKey {
    case output
    case completion
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    self.init(
      output: try container.decode([Output].self, forKey: .output),
      completion: try container.decode(Subscribers.Completion<Failure>.self, forKey: .completion))
  }

  public func encode(to encoder: any Encoder) throws {
    try encode(into: encoder)
  }

  /// Encodes the recording into `encoder` (the same output as `encode(to:)`), as in Combine.
  public func encode(into encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(output, forKey: .output)
    try container.encode(completion, forKey: .completion)
  }
}

extension Record: Sendable where Output: Sendable {}
extension Record.Recording: Sendable where Output: Sendable {}

/// A recording's values, then its completion; described by the recorded values.
@usableFromInline
struct RecordSource<Output, Failure: Error>: EmissionSource {
  @usableFromInline let output: [Output]
  @usableFromInline var index = 0
  @usableFromInline let completion: Subscribers.Completion<Failure>

  @inlinable init(output: [Output], completion: Subscribers.Completion<Failure>) {
    self.output = output
    self.completion = completion
  }

  @inlinable mutating func next() -> Output? {
    guard index < output.count else { return nil }
    defer { index += 1 }
    return output[index]
  }

  @usableFromInline var liveDescription: String { String(describing: output) }
  @usableFromInline static var finishedDescription: String { "Cancelled Events" }
  /// Combine's children: the recorded values (an empty array once the subscription has ended)
  /// and the completion.
  @usableFromInline func reflectedChildren(finished: Bool) -> [Mirror.Child] {
    [("sequence", finished ? [] : output), ("completion", completion)]
  }
}
