// Floating-point arithmetic that train/check_no_float.cmake must find (the test
// train_float_check_sees_floats expects it to fail on this object).
int ScaleByHalf(int x) { return static_cast<int>(x * 0.5); }
double Product(double a, double b) { return a * b; }
