#include "CSecretService.h"

#include <gmp.h>
#include <string.h>

static void clear_and_free(mpz_t value) {
    // GMP does not zero what it frees: the private exponent's limbs are wiped first.
    if (value->_mp_d != NULL && value->_mp_alloc > 0) {
        volatile mp_limb_t *limbs = value->_mp_d;
        for (int index = 0; index < value->_mp_alloc; index++) limbs[index] = 0;
    }
    mpz_clear(value);
}

int vault_dh_powm(const uint8_t *base, size_t base_length, const uint8_t *exponent, size_t exponent_length,
                  const uint8_t *modulus, size_t modulus_length, uint8_t *out) {
    mpz_t b, e, m, r;
    mpz_inits(b, e, m, r, NULL);
    mpz_import(b, base_length, 1, 1, 1, 0, base);
    mpz_import(e, exponent_length, 1, 1, 1, 0, exponent);
    mpz_import(m, modulus_length, 1, 1, 1, 0, modulus);
    int status = -1;
    if (mpz_sgn(m) > 0 && mpz_odd_p(m) && mpz_sgn(e) > 0 && (mpz_sizeinbase(m, 256) <= modulus_length)) {
        mpz_powm_sec(r, b, e, m);
        size_t count = 0;
        memset(out, 0, modulus_length);
        size_t needed = (mpz_sizeinbase(r, 2) + 7) / 8;
        if (mpz_sgn(r) == 0) needed = 0;
        if (needed <= modulus_length) {
            mpz_export(out + (modulus_length - needed), &count, 1, 1, 1, 0, r);
            status = 0;
        }
    }
    clear_and_free(e);
    clear_and_free(r);
    mpz_clears(b, m, NULL);
    return status;
}

int vault_dh_public_is_valid(const uint8_t *value, size_t value_length, const uint8_t *modulus, size_t modulus_length) {
    mpz_t v, m;
    mpz_inits(v, m, NULL);
    mpz_import(v, value_length, 1, 1, 1, 0, value);
    mpz_import(m, modulus_length, 1, 1, 1, 0, modulus);
    mpz_sub_ui(m, m, 1);
    int valid = mpz_cmp_ui(v, 1) > 0 && mpz_cmp(v, m) < 0;
    mpz_clears(v, m, NULL);
    return valid;
}
