package hardware

// For TestStaticGPUs (package hardware_test, which can import staticgen).
var (
	BuiltinTOML = builtinTOML
	StaticGPUs  = staticGPUs
)
