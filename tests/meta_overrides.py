"""Overrides for the tests that run the profile tool on the meta device (shapes and counts only,
nothing timed, no weights read), shared so that each test adds only what it is about."""

__all__ = ["ANY_MODEL_META", "ANY_MODEL_META_32", "SWIFTNET_META"]

#: The meta device without a summary; the test chooses the model.
ANY_MODEL_META = ["device=meta", "summary=false"]
#: The same at a 32x32 input.
ANY_MODEL_META_32 = ["device=meta", "summary=false", "input.size=[32,32]"]
#: SwiftNet on the meta device at a 64x64 input.
SWIFTNET_META = ["model=swiftnet", "device=meta", "input.size=[64,64]", "summary=false"]
