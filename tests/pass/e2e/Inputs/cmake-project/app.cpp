extern "C" int square(int);
void greet(int);
int main() {
  greet(square(7));
  return 0;
}
