import Foundation

/// The size factor of stress and soak tests: `SLUICE_STRESS_SCALE` in the environment, 1 for the
/// full size. Unset, it is ``defaultStressScale``, so that a plain `swift test` is quick; CI's
/// plain run sets 1, its sanitizer runs 0.05, a soak run more (10).
package let stressScale =
  ProcessInfo.processInfo.environment["SLUICE_STRESS_SCALE"].flatMap(Double.init)
  ?? defaultStressScale

/// The size factor when `SLUICE_STRESS_SCALE` is unset: 5 % of the full size.
package let defaultStressScale = 0.05

/// `count` scaled by ``stressScale`` (at least 1).
package func stressScaled(_ count: Int) -> Int { max(1, Int(Double(count) * stressScale)) }
