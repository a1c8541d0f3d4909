package calibrate

// BuiltinStatic is builtinStatic, for TestStaticProfiles (package
// calibrate_test, which can import staticgen).
var BuiltinStatic = builtinStatic

// BuiltinFS is the embedded profiles/*.toml.
var BuiltinFS = builtinFS
