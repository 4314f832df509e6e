// Structs by value, for tests/pass/e2e/values.cpp: refused when chosen.
struct Big {
  long a[8];
};
struct Pair {
  int a, b;
};
long sumBig(Big big) { return big.a[0] + big.a[7]; }
int firstOfPair(Pair pair) { return pair.a; }
Pair makePair(int a) { return {a, a}; }
