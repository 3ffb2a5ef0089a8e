import Dispatch
import Foundation
import SluiceCore
import Testing

/// `DispatchQueue.SchedulerTimeType` arithmetic as Combine does it: saturating, never trapping
/// (issue: Combine parity).
@Suite("Combine parity: dispatch scheduler time")
struct DispatchTimeParityTests {
  typealias Time = DispatchQueue.SchedulerTimeType
  typealias Stride = Time.Stride

  @Test func strideConversionsSaturate() {
    #expect(Stride(.seconds(2)).magnitude == 2_000_000_000)
    #expect(Stride(.milliseconds(2)).magnitude == 2_000_000)
    #expect(Stride(.microseconds(2)).magnitude == 2_000)
    #expect(Stride(.never).magnitude == .max)
    for interval: DispatchTimeInterval in [
      .seconds(.max), .milliseconds(.max), .microseconds(.max),
    ] {
      #expect(Stride(interval).magnitude == .max)
    }
    for interval: DispatchTimeInterval in [
      .seconds(.min), .milliseconds(.min), .microseconds(.min),
    ] {
      #expect(Stride(interval).magnitude == .min)
    }
    #expect(Stride.seconds(.max).magnitude == .max)
    #expect(Stride.milliseconds(.min).magnitude == .min)
    #expect(Stride.seconds(1.2).magnitude == 1_200_000_000)
    #expect(Stride.seconds(Double(Int.max) / 1_000_000_000).magnitude == .max)
    #expect(Stride.seconds(-Double.greatestFiniteMagnitude).magnitude == .min)
    #expect((1.2 as Stride).magnitude == 1_200_000_000)
    #expect(Stride(exactly: UInt64.max) == nil)
    #expect((Stride.nanoseconds(.max) + .nanoseconds(1)).magnitude == .max)
    #expect((Stride.nanoseconds(.min) - .nanoseconds(1)).magnitude == .min)
    #expect((Stride.nanoseconds(.max) * .nanoseconds(2)).magnitude == .max)
  }

  @Test func distanceSaturatesWhenTheGapDoesNotFitEitherWay() {
    let early = Time(DispatchTime(uptimeNanoseconds: 10_000))
    let later = Time(DispatchTime(uptimeNanoseconds: 10_431))
    let far = Time(.distantFuture)
    let int64Max = Time(DispatchTime(uptimeNanoseconds: UInt64(Int.max)))
    #expect(early.distance(to: later) == .nanoseconds(431))
    #expect(later.distance(to: early) == .nanoseconds(-431))
    #expect(early.distance(to: far) == .nanoseconds(.max))
    #expect(far.distance(to: early) == .nanoseconds(.max))
    #expect(early.distance(to: int64Max) == .nanoseconds(.max - 10_000))
    #expect(int64Max.distance(to: early) == .nanoseconds(-(.max - 10_000)))
    #expect(far.distance(to: far) == .nanoseconds(0))
  }

  @Test func advancingSaturatesAtTheDistantFutureAndTheFirstInstant() {
    let time = Time(DispatchTime(uptimeNanoseconds: 10_000))
    #expect(time.advanced(by: .nanoseconds(431)) == Time(DispatchTime(uptimeNanoseconds: 10_431)))
    #expect(time.advanced(by: .nanoseconds(-220)) == Time(DispatchTime(uptimeNanoseconds: 9_780)))
    #expect(time.advanced(by: .nanoseconds(.max)).dispatchTime == .distantFuture)
    #expect(Time(.distantFuture).advanced(by: .seconds(1)).dispatchTime == .distantFuture)
    let first = Time(DispatchTime(uptimeNanoseconds: 1))
    #expect(first.advanced(by: .nanoseconds(-1_000)).dispatchTime.uptimeNanoseconds == 1)
    #expect(first.advanced(by: .nanoseconds(.min)).dispatchTime.uptimeNanoseconds == 1)
  }

  @Test func strideEncodesUnderCombinesKey() throws {
    struct Wrapper: Codable, Equatable { var value: Stride }
    let data = try JSONEncoder().encode(Wrapper(value: .nanoseconds(419_872)))
    #expect(String(decoding: data, as: UTF8.self) == #"{"value":{"_nanoseconds":419872}}"#)
    #expect(
      try JSONDecoder().decode(Wrapper.self, from: data) == Wrapper(value: .nanoseconds(419_872)))
  }
}
