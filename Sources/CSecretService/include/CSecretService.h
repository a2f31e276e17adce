// The C the Secret Service provider (`vault secret-service`, the SecretService target) needs, wrapped in this one
// target and linked only by it (and so only by vault-net): sd-bus from libsystemd (the session bus: names, object
// dispatch, signals) and GMP's constant-time modular exponentiation for the Diffie-Hellman session of
// dh-ietf1024-sha256-aes128-cbc-pkcs7. Every sd-bus function the Swift side calls is a plain (not variadic) one, and
// its one callback type (sd_bus_message_handler_t) is a C function pointer Swift can pass: no trampolines needed.
#ifndef VAULT_CSECRETSERVICE_H
#define VAULT_CSECRETSERVICE_H

#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

/// out = base^exponent mod modulus, each an unsigned big-endian integer, `out` written as exactly `modulus_length`
/// bytes (zero-padded on the left, as libsecret pads the shared secret to the prime's length). GMP's
/// mpz_powm_sec (constant time in the exponent); the exponent's limbs are zeroed before they are freed.
/// Returns 0, or -1 when the modulus is even or zero, or the exponent is zero (mpz_powm_sec's preconditions).
int vault_dh_powm(const uint8_t *base, size_t base_length, const uint8_t *exponent, size_t exponent_length,
                  const uint8_t *modulus, size_t modulus_length, uint8_t *out);

/// Whether 1 < value < modulus - 1 (a Diffie-Hellman public value that is not degenerate), both big-endian.
int vault_dh_public_is_valid(const uint8_t *value, size_t value_length, const uint8_t *modulus, size_t modulus_length);

#endif
