/// A publisher that provides an explicit means of connecting and cancelling publication, as in
/// Combine.
///
/// Subscribers attach first; values start flowing only once `connect()` is called. Cancelling
/// the returned value disconnects from the upstream.
public protocol ConnectablePublisher<Output, Failure>: Publisher {
  /// Connects to the publisher, letting it produce elements.
  func connect() -> any Cancellable
}
