import Sluice
import SluiceTesting

extension DiagramScenario {
  /// One input of letters (`"-a-b|"`), and what `operate` makes of it.
  static func letters<P: Publisher & SendableMetatype>(
    _ name: String, family: String, covers: [String], title: String, input: String,
    caption: String = "", ticks: Int? = nil,
    _ operate: @escaping @Sendable (MarblePublisher<String, Never>, Lab) throws -> P
  ) -> DiagramScenario {
    DiagramScenario(
      name, family: family, covers: covers, title: title, caption: caption, ticks: ticks
    ) { lab in
      lab.observe(try operate(try lab.letters(input), lab))
    }
  }

  /// One input of digits (`"-1-2|"`, `Int` values), and what `operate` makes of it.
  static func numbers<P: Publisher & SendableMetatype>(
    _ name: String, family: String, covers: [String], title: String, input: String,
    caption: String = "", ticks: Int? = nil,
    _ operate: @escaping @Sendable (MarblePublisher<Int, Never>, Lab) throws -> P
  ) -> DiagramScenario {
    DiagramScenario(
      name, family: family, covers: covers, title: title, caption: caption, ticks: ticks
    ) { lab in
      lab.observe(try operate(try lab.numbers(input), lab))
    }
  }

  /// One input of digits that fails with `boom` at `#`, and what `operate` makes of it.
  static func failingNumbers<P: Publisher & SendableMetatype>(
    _ name: String, family: String, covers: [String], title: String, input: String,
    caption: String = "", ticks: Int? = nil,
    _ operate: @escaping @Sendable (MarblePublisher<Int, Boom>, Lab) throws -> P
  ) -> DiagramScenario {
    DiagramScenario(
      name, family: family, covers: covers, title: title, caption: caption, ticks: ticks
    ) { lab in
      lab.observe(try operate(try lab.failing(input, values: Lab.digits), lab))
    }
  }
}

/// `value`, or a throw of ``Boom`` when `fails` says so: the closures of try-operators.
func orThrow<T>(_ value: T, if fails: Bool) throws -> T {
  if fails { throw Boom() }
  return value
}
