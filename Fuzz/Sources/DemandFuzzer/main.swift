internal import FuzzDriver

// The target's entry point: libFuzzer's driver with this process's command line.
runFuzzer(fuzzDemand)
