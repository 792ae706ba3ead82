/* not_an_allocator.so: a shared library that defines no malloc, for the test that mtrace replay
 * refuses it as an allocator (test_sim_emulate.c) rather than replay glibc under its name. */
int not_an_allocator(void);

int not_an_allocator(void)
{
    return 42;
}
