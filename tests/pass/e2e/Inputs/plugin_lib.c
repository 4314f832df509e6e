// The library dlopen'ed by dlopen.c: its module registers its own function table when it is
// loaded, and gets ids of its own.
__attribute__((noinline)) int plugin_helper(int x) { return x * 3; }
int plugin_entry(int x) { return plugin_helper(x) + 1; }
