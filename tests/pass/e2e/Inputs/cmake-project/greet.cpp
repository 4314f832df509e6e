#include <cstdio>
void greet(int value) { std::printf("value %d\n", value); }
