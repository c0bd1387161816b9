/* transformer_block.c - placeholder */
int main(void) { return 0; }
