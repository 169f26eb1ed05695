// A module without functions (te-run-errors.mlir).
module {
}
