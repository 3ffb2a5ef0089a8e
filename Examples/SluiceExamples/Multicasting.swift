import Sluice

/// One upstream subscription shared by several subscribers: `multicast` with a subject made on
/// demand or given, connected by hand once everyone is subscribed.
@Sendable func multicastingTour() async -> [String] {
  var lines: [String] = []

  // multicast(_:): the closure makes the subject when the first subscriber arrives; nothing runs
  // upstream until connect(), so both subscribers see every value.
  var runs = 0
  let expensive = Deferred {
    runs += 1
    return [1, 2, 3].publisher
  }
  let shared = expensive.multicast { PassthroughSubject<Int, Never>() }
  var left: [Int] = []
  var right: [Int] = []
  let subscribers = [shared.sink { left.append($0) }, shared.sink { right.append($0 * 10) }]
  let connection = shared.connect()
  lines.append(
    "multicast { PassthroughSubject() }: ran upstream \(runs) time, \(left) and \(right)")
  connection.cancel()
  subscribers.forEach { $0.cancel() }

  // multicast(subject:): a CurrentValueSubject gives late subscribers the latest value; awaited
  // with `values` from the task.
  let status = PassthroughSubject<String, Never>()
  let latest = status.multicast(subject: CurrentValueSubject("offline"))
  let link = latest.connect()
  status.send("online")
  var iterator = latest.prefix(2).values.makeAsyncIterator()
  status.send("syncing")
  var seen: [String] = []
  while let value = await iterator.next() { seen.append(value) }
  lines.append("multicast(subject: CurrentValueSubject): a late subscriber saw \(seen)")
  link.cancel()
  return lines
}
