import Foundation

/// The size factor of stress and soak tests: `SLUICE_STRESS_SCALE` in the environment (1 when
/// unset). CI's full run sets it to run them at full size; the thread-sanitizer run lower.
package let stressScale =
  ProcessInfo.processInfo.environment["SLUICE_STRESS_SCALE"].flatMap(Double.init) ?? 1

/// `count` scaled by ``stressScale`` (at least 1).
package func stressScaled(_ count: Int) -> Int { max(1, Int(Double(count) * stressScale)) }
