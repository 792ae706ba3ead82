/* The varint codec of trace_format.h: every record field goes through it, so its edges are tested
 * on their own: the 7-bit boundaries, the 64-bit extremes, and input that ends early or runs long. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "mtrace/trace_format.h"
#include "test_util.h"

static const uint64_t unsigned_cases[] = {
    0,          1,
    127,        128,
    255,        16383,
    16384,      (1ull << 21) - 1,
    1ull << 21, (1ull << 56) - 1,
    1ull << 56, (1ull << 63) - 1,
    1ull << 63, UINT64_MAX - 1,
    UINT64_MAX,
};

static const int64_t signed_cases[] = {
    0, 1, -1, 63, -64, 64, -65, 8191, -8192, INT32_MAX, INT32_MIN, INT64_MAX - 1, INT64_MAX, INT64_MIN + 1, INT64_MIN,
};

/* Bytes a varint of v takes: one per started group of 7 bits. */
static size_t expected_len(uint64_t v)
{
    size_t n = 1;
    while (v >>= 7)
        n++;
    return n;
}

START_TEST(uvarint_round_trip)
{
    const uint64_t v = unsigned_cases[_i];
    uint8_t buf[16];
    memset(buf, 0xcc, sizeof buf);
    const uint8_t *end = mt_put_uvarint(buf, v);
    ck_assert_uint_eq((size_t)(end - buf), expected_len(v));
    ck_assert_uint_eq(buf[end - buf], 0xcc); /* nothing written past the end */
    /* every byte but the last has the continuation bit */
    for (const uint8_t *p = buf; p < end - 1; p++)
        ck_assert_uint_ne(*p & 0x80, 0);
    ck_assert_uint_eq(end[-1] & 0x80, 0);

    const uint8_t *p = buf;
    uint64_t out = 12345;
    ck_assert_int_eq(mt_get_uvarint(&p, end, &out), 0);
    ck_assert_uint_eq(out, v);
    ck_assert_ptr_eq(p, end);
}
END_TEST

START_TEST(uvarint_known_encodings)
{
    uint8_t buf[16];
    ck_assert_uint_eq((size_t)(mt_put_uvarint(buf, 0) - buf), 1);
    ck_assert_uint_eq(buf[0], 0x00);
    ck_assert_uint_eq((size_t)(mt_put_uvarint(buf, 127) - buf), 1);
    ck_assert_uint_eq(buf[0], 0x7f);
    ck_assert_uint_eq((size_t)(mt_put_uvarint(buf, 128) - buf), 2);
    ck_assert_uint_eq(buf[0], 0x80);
    ck_assert_uint_eq(buf[1], 0x01);
    ck_assert_uint_eq((size_t)(mt_put_uvarint(buf, 300) - buf), 2);
    ck_assert_uint_eq(buf[0], 0xac);
    ck_assert_uint_eq(buf[1], 0x02);
    /* 2^63 and UINT64_MAX need the full 10 bytes; the 10th carries the top bit alone */
    ck_assert_uint_eq((size_t)(mt_put_uvarint(buf, 1ull << 63) - buf), 10);
    for (int i = 0; i < 9; i++)
        ck_assert_uint_eq(buf[i], 0x80);
    ck_assert_uint_eq(buf[9], 0x01);
    ck_assert_uint_eq((size_t)(mt_put_uvarint(buf, UINT64_MAX) - buf), 10);
    for (int i = 0; i < 9; i++)
        ck_assert_uint_eq(buf[i], 0xff);
    ck_assert_uint_eq(buf[9], 0x01);
}
END_TEST

START_TEST(zigzag_round_trip)
{
    const int64_t v = signed_cases[_i];
    const uint64_t z = mt_zigzag(v);
    ck_assert_int_eq(mt_unzigzag(z), v);
    /* zigzag interleaves: 0, -1, 1, -2, 2 ... so small magnitudes stay small */
    ck_assert_uint_eq(z, v >= 0 ? (uint64_t)v * 2 : ((uint64_t)(-(v + 1))) * 2 + 1);
}
END_TEST

START_TEST(zigzag_known_values)
{
    ck_assert_uint_eq(mt_zigzag(0), 0);
    ck_assert_uint_eq(mt_zigzag(-1), 1);
    ck_assert_uint_eq(mt_zigzag(1), 2);
    ck_assert_uint_eq(mt_zigzag(-2), 3);
    ck_assert_uint_eq(mt_zigzag(INT64_MAX), UINT64_MAX - 1);
    ck_assert_uint_eq(mt_zigzag(INT64_MIN), UINT64_MAX);
    ck_assert_int_eq(mt_unzigzag(UINT64_MAX), INT64_MIN);
    ck_assert_int_eq(mt_unzigzag(UINT64_MAX - 1), INT64_MAX);
}
END_TEST

START_TEST(svarint_round_trip)
{
    const int64_t v = signed_cases[_i];
    uint8_t buf[16];
    const uint8_t *end = mt_put_svarint(buf, v);
    ck_assert_uint_eq((size_t)(end - buf), expected_len(mt_zigzag(v)));
    const uint8_t *p = buf;
    uint64_t raw;
    ck_assert_int_eq(mt_get_uvarint(&p, end, &raw), 0);
    ck_assert_int_eq(mt_unzigzag(raw), v);
    ck_assert_ptr_eq(p, end);
}
END_TEST

START_TEST(svarint_small_magnitudes_are_one_byte)
{
    uint8_t buf[16];
    ck_assert_uint_eq((size_t)(mt_put_svarint(buf, -64) - buf), 1);
    ck_assert_uint_eq((size_t)(mt_put_svarint(buf, 63) - buf), 1);
    ck_assert_uint_eq((size_t)(mt_put_svarint(buf, 64) - buf), 2);
    ck_assert_uint_eq((size_t)(mt_put_svarint(buf, -65) - buf), 2);
    ck_assert_uint_eq((size_t)(mt_put_svarint(buf, INT64_MIN) - buf), 10);
}
END_TEST

/* A varint cut anywhere before its last byte must be refused, and must leave the cursor alone:
 * the reader relies on that to treat a cut record as the end of the data. */
START_TEST(truncated_uvarint_rejected)
{
    const uint64_t v = unsigned_cases[_i];
    uint8_t buf[16];
    const size_t len = (size_t)(mt_put_uvarint(buf, v) - buf);
    for (size_t cut = 0; cut < len; cut++) {
        const uint8_t *p = buf;
        uint64_t out = 777;
        ck_assert_int_eq(mt_get_uvarint(&p, buf + cut, &out), -1);
        ck_assert_ptr_eq(p, buf);
        ck_assert_uint_eq(out, 777);
    }
}
END_TEST

START_TEST(overlong_uvarint_rejected)
{
    /* 10 continuation bytes then a terminator: 11 bytes, longer than any 64-bit value needs */
    uint8_t buf[11];
    memset(buf, 0x80, 10);
    buf[10] = 0x00;
    const uint8_t *p = buf;
    uint64_t out = 777;
    ck_assert_int_eq(mt_get_uvarint(&p, buf + sizeof buf, &out), -1);
    ck_assert_ptr_eq(p, buf);
    ck_assert_uint_eq(out, 777);

    /* the same with all payload bits set */
    memset(buf, 0xff, 10);
    buf[10] = 0x01;
    p = buf;
    ck_assert_int_eq(mt_get_uvarint(&p, buf + sizeof buf, &out), -1);
    ck_assert_ptr_eq(p, buf);

    /* an endless run of continuation bytes stops at the limit, not at the end of the buffer */
    uint8_t many[64];
    memset(many, 0x80, sizeof many);
    p = many;
    ck_assert_int_eq(mt_get_uvarint(&p, many + sizeof many, &out), -1);
    ck_assert_ptr_eq(p, many);
}
END_TEST

START_TEST(ten_byte_uvarint_accepted)
{
    /* the longest legal form: 9 continuation bytes and a 10th with the top bit */
    uint8_t buf[10];
    memset(buf, 0x80, 9);
    buf[9] = 0x01;
    const uint8_t *p = buf;
    uint64_t out = 0;
    ck_assert_int_eq(mt_get_uvarint(&p, buf + sizeof buf, &out), 0);
    ck_assert_uint_eq(out, 1ull << 63);
    ck_assert_ptr_eq(p, buf + 10);
}
END_TEST

/* Several varints back to back decode in order and leave the cursor after the last. */
START_TEST(sequence_decodes_in_order)
{
    uint8_t buf[sizeof unsigned_cases / sizeof unsigned_cases[0] * 10];
    uint8_t *q = buf;
    const size_t n = sizeof unsigned_cases / sizeof unsigned_cases[0];
    for (size_t i = 0; i < n; i++)
        q = mt_put_uvarint(q, unsigned_cases[i]);
    const uint8_t *p = buf;
    for (size_t i = 0; i < n; i++) {
        uint64_t out;
        ck_assert_int_eq(mt_get_uvarint(&p, q, &out), 0);
        ck_assert_uint_eq(out, unsigned_cases[i]);
    }
    ck_assert_ptr_eq(p, q);
    uint64_t out;
    ck_assert_int_eq(mt_get_uvarint(&p, q, &out), -1); /* nothing left */
}
END_TEST

static Suite *varint_suite(void)
{
    Suite *s = suite_create("varint");
    const int nu = (int)(sizeof unsigned_cases / sizeof unsigned_cases[0]);
    const int ns = (int)(sizeof signed_cases / sizeof signed_cases[0]);

    TCase *tc = tcase_create("unsigned");
    tcase_add_loop_test(tc, uvarint_round_trip, 0, nu);
    tcase_add_test(tc, uvarint_known_encodings);
    tcase_add_test(tc, ten_byte_uvarint_accepted);
    tcase_add_test(tc, sequence_decodes_in_order);
    suite_add_tcase(s, tc);

    tc = tcase_create("signed");
    tcase_add_loop_test(tc, zigzag_round_trip, 0, ns);
    tcase_add_test(tc, zigzag_known_values);
    tcase_add_loop_test(tc, svarint_round_trip, 0, ns);
    tcase_add_test(tc, svarint_small_magnitudes_are_one_byte);
    suite_add_tcase(s, tc);

    tc = tcase_create("malformed");
    tcase_add_loop_test(tc, truncated_uvarint_rejected, 0, nu);
    tcase_add_test(tc, overlong_uvarint_rejected);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(varint_suite());
}
