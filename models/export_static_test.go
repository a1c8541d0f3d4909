package models

// For TestStaticModels (package models_test, which can import staticgen).
var (
	BuiltinTOML  = builtinTOML
	StaticModels = staticModels
)
