import Foundation

/// A publisher that cannot be slowed down: it sends when its source does (a subject, a
/// property, a notification, a timer), and what finds its subscriber without demand is lost.
///
/// SluiceAsync's bridges (`values`, `stream()`, `sink(isolatedTo:)`) read this marker: for a hot
/// publisher they request `.unlimited` and buffer what the consumer has not taken yet, so a
/// `for await` loop over `model.$query.values` sees every assignment even while its body runs;
/// for every other (cold) publisher they keep Combine's demand of one value per `next()`.
///
/// Subjects, `@Published`'s publisher, `ObservableObjectPublisher`, `NotificationCenter`'s and
/// `Timer`'s publishers, `share()` and `multicast` are hot; so is every operator that forwards
/// values as they come (`map`, `filter`, `removeDuplicates`, `debounce`, `receive(on:)`, …)
/// when its upstream is, and `merge`, `zip` and `combineLatest` when all their upstreams are.
/// `eraseToAnyPublisher()` keeps the property (the bridges look through `AnyPublisher`).
/// Conform a publisher of your own to it when it drops values its subscriber has not demanded.
public protocol HotPublisher: Publisher {}

extension PassthroughSubject: HotPublisher {}
extension CurrentValueSubject: HotPublisher {}
extension Published.Publisher: HotPublisher {}
extension ObservableObjectPublisher: HotPublisher {}
extension NotificationCenter.Publisher: HotPublisher {}
extension Timer.TimerPublisher: HotPublisher {}
extension Publishers.Share: HotPublisher {}
extension Publishers.Multicast: HotPublisher {}

// Operators that forward values as they arrive, when what they forward is hot.
extension Publishers.Map: HotPublisher where Upstream: HotPublisher {}
extension Publishers.TryMap: HotPublisher where Upstream: HotPublisher {}
extension Publishers.Filter: HotPublisher where Upstream: HotPublisher {}
extension Publishers.TryFilter: HotPublisher where Upstream: HotPublisher {}
extension Publishers.CompactMap: HotPublisher where Upstream: HotPublisher {}
extension Publishers.TryCompactMap: HotPublisher where Upstream: HotPublisher {}
extension Publishers.RemoveDuplicates: HotPublisher where Upstream: HotPublisher {}
extension Publishers.TryRemoveDuplicates: HotPublisher where Upstream: HotPublisher {}
extension Publishers.Scan: HotPublisher where Upstream: HotPublisher {}
extension Publishers.TryScan: HotPublisher where Upstream: HotPublisher {}
extension Publishers.MapError: HotPublisher where Upstream: HotPublisher {}
extension Publishers.MapKeyPath: HotPublisher where Upstream: HotPublisher {}
extension Publishers.MapKeyPath2: HotPublisher where Upstream: HotPublisher {}
extension Publishers.MapKeyPath3: HotPublisher where Upstream: HotPublisher {}
extension Publishers.SetFailureType: HotPublisher where Upstream: HotPublisher {}
extension Publishers.HandleEvents: HotPublisher where Upstream: HotPublisher {}
extension Publishers.Print: HotPublisher where Upstream: HotPublisher {}
extension Publishers.Breakpoint: HotPublisher where Upstream: HotPublisher {}
extension Publishers.AssertNoFailure: HotPublisher where Upstream: HotPublisher {}
extension Publishers.DropWhile: HotPublisher where Upstream: HotPublisher {}
extension Publishers.TryDropWhile: HotPublisher where Upstream: HotPublisher {}
extension Publishers.Drop: HotPublisher where Upstream: HotPublisher {}
extension Publishers.PrefixWhile: HotPublisher where Upstream: HotPublisher {}
extension Publishers.TryPrefixWhile: HotPublisher where Upstream: HotPublisher {}
extension Publishers.Output: HotPublisher where Upstream: HotPublisher {}
extension Publishers.ReplaceError: HotPublisher where Upstream: HotPublisher {}
extension Publishers.Encode: HotPublisher where Upstream: HotPublisher {}
extension Publishers.Decode: HotPublisher where Upstream: HotPublisher {}
extension Publishers.MeasureInterval: HotPublisher where Upstream: HotPublisher {}
extension Publishers.Debounce: HotPublisher where Upstream: HotPublisher {}
extension Publishers.Throttle: HotPublisher where Upstream: HotPublisher {}
extension Publishers.Delay: HotPublisher where Upstream: HotPublisher {}
extension Publishers.ReceiveOn: HotPublisher where Upstream: HotPublisher {}
extension Publishers.SubscribeOn: HotPublisher where Upstream: HotPublisher {}
extension Publishers.Timeout: HotPublisher where Upstream: HotPublisher {}
extension Publishers.DropUntilOutput: HotPublisher where Upstream: HotPublisher {}
extension Publishers.PrefixUntilOutput: HotPublisher where Upstream: HotPublisher {}
extension Publishers.Autoconnect: HotPublisher where Upstream: HotPublisher {}
extension Publishers.MergeMany: HotPublisher where Upstream: HotPublisher {}
extension Publishers.Merge: HotPublisher where A: HotPublisher, B: HotPublisher {}
extension Publishers.Merge3: HotPublisher where A: HotPublisher, B: HotPublisher, C: HotPublisher {}
extension Publishers.Merge4: HotPublisher
where A: HotPublisher, B: HotPublisher, C: HotPublisher, D: HotPublisher {}
extension Publishers.Merge5: HotPublisher
where A: HotPublisher, B: HotPublisher, C: HotPublisher, D: HotPublisher, E: HotPublisher {}
extension Publishers.Merge6: HotPublisher
where
  A: HotPublisher, B: HotPublisher, C: HotPublisher, D: HotPublisher, E: HotPublisher,
  F: HotPublisher
{}
extension Publishers.Merge7: HotPublisher
where
  A: HotPublisher, B: HotPublisher, C: HotPublisher, D: HotPublisher, E: HotPublisher,
  F: HotPublisher, G: HotPublisher
{}
extension Publishers.Merge8: HotPublisher
where
  A: HotPublisher, B: HotPublisher, C: HotPublisher, D: HotPublisher, E: HotPublisher,
  F: HotPublisher, G: HotPublisher, H: HotPublisher
{}
extension Publishers.Zip: HotPublisher where A: HotPublisher, B: HotPublisher {}
extension Publishers.Zip3: HotPublisher where A: HotPublisher, B: HotPublisher, C: HotPublisher {}
extension Publishers.Zip4: HotPublisher
where A: HotPublisher, B: HotPublisher, C: HotPublisher, D: HotPublisher {}
extension Publishers.CombineLatest: HotPublisher where A: HotPublisher, B: HotPublisher {}
extension Publishers.CombineLatest3: HotPublisher
where A: HotPublisher, B: HotPublisher, C: HotPublisher {}
extension Publishers.CombineLatest4: HotPublisher
where A: HotPublisher, B: HotPublisher, C: HotPublisher, D: HotPublisher {}

extension Publisher {
  /// Whether this publisher is hot (see ``HotPublisher``), looking through `AnyPublisher`; any
  /// subject counts, whether or not it declares the marker.
  package var isHotPublisher: Bool {
    if self is any HotPublisher || self is any Subject { return true }
    if let erased = self as? AnyPublisher<Output, Failure> { return erased.base.isHotPublisher }
    return false
  }
}
