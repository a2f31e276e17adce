/* The floor of a passphrase unlock: one Argon2id (libsodium's crypto_pwhash, the same code the vault
 * calls) in a fresh process. Usage: argon2_floor OPSLIMIT MEMLIMIT_BYTES. Built by compare.sh:
 *     cc -O2 -o argon2_floor argon2_floor.c $(pkg-config --cflags --libs libsodium) */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s OPSLIMIT MEMLIMIT_BYTES\n", argv[0]); return 64; }
    if (sodium_init() < 0) return 1;
    unsigned long long ops = strtoull(argv[1], NULL, 10);
    size_t mem = (size_t)strtoull(argv[2], NULL, 10);
    static const char passphrase[] = "correct horse battery staple";
    unsigned char salt[crypto_pwhash_SALTBYTES] = {7}, key[32];
    if (crypto_pwhash(key, sizeof key, passphrase, sizeof passphrase - 1, salt, ops, mem,
                      crypto_pwhash_ALG_ARGON2ID13) != 0) { fputs("crypto_pwhash failed\n", stderr); return 1; }
    return key[0] == 0 && key[1] == 0 && key[2] == 0 && key[3] == 0; /* use the output */
}
