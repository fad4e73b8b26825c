// Not UTF-8: café.
func.func @f() {
  return
}
