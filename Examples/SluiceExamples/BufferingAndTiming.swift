import Dispatch
import Sluice
import SluiceTesting

/// Buffering a fast source for a slow async consumer, grouping values by time, measuring the gaps
/// between them, and choosing where the subscription is made — on virtual time, awaited from async
/// code.
@Sendable func bufferingTour() async -> [String] {
  var lines: [String] = []

  // buffer: the subject is faster than the consumer; the buffer asks it for everything and keeps
  // the newest 3 until the consumer's `next()` asks for them, one at a time.
  let readings = PassthroughSubject<Int, Never>()
  var slowReader = readings.buffer(size: 3, prefetch: .byRequest, whenFull: .dropOldest)
    .values.makeAsyncIterator()
  for reading in 1...10 { readings.send(reading) }
  readings.send(completion: .finished)
  var read: [Int] = []
  while let reading = await slowReader.next() { read.append(reading) }
  lines.append("buffer(size: 3, prefetch: .byRequest, whenFull: .dropOldest): read \(read)")

  // collect(.byTime) and collect(.byTimeOrCount) on virtual time: groups per second, or per
  // two values, whichever comes first.
  let scheduler = DispatchQueue.test
  let taps = PassthroughSubject<String, Never>()
  var byTime: [[String]] = []
  var byTimeOrCount: [[String]] = []
  let grouping = [
    taps.collect(.byTime(scheduler, .seconds(1))).sink { byTime.append($0) },
    taps.collect(.byTimeOrCount(scheduler, .seconds(1), 2)).sink { byTimeOrCount.append($0) },
  ]
  for (delay, tap) in [(100, "a"), (100, "b"), (100, "c"), (1000, "d")] {
    scheduler.advance(by: .milliseconds(delay))
    taps.send(tap)
  }
  scheduler.advance(by: .seconds(2))
  grouping.forEach { $0.cancel() }
  lines.append("collect(.byTime(1s)): \(byTime)")
  lines.append("collect(.byTimeOrCount(1s, 2)): \(byTimeOrCount)")

  // measureInterval: the time between a user's keystrokes, in milliseconds of virtual time.
  let keys = PassthroughSubject<Character, Never>()
  var gaps: [Int] = []
  let measuring = keys.measureInterval(using: scheduler)
    .sink { gaps.append(Int($0.magnitude / 1_000_000)) }
  for delay in [50, 120, 80, 400] {
    scheduler.advance(by: .milliseconds(delay))
    keys.send("k")
  }
  measuring.cancel()
  lines.append("measureInterval between keystrokes: \(gaps) ms")

  // subscribe(on:): the subscription (and so the work a cold publisher does when subscribed) is
  // made on the queue; the value is awaited from the task.
  let key = DispatchSpecificKey<String>()
  let io = DispatchQueue(label: "tour.io")
  io.setSpecific(key: key, value: "the io queue")
  let madeOn = try? await Deferred { Just(DispatchQueue.getSpecific(key: key) ?? "the caller") }
    .subscribe(on: io)
    .firstValue()
  lines.append("subscribe(on: io): the publisher was made on \(madeOn ?? "?")")
  return lines
}
