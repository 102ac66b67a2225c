/* facts.h: the macros the ABI facts programs (cudafacts.c, cufilefacts.c)
 * share to print a parameter list's classes and sizes from a shim's
 * symbol list. Included by csrc's ABI test programs only. */
#ifndef KVTIER_FACTS_H
#define KVTIER_FACTS_H

#include <stddef.h>
#include <stdio.h>

/* KV_CLASS is 'p' for a pointer, 'f' for a floating type, 'i' else. */
#define KV_CLASS(T) (__builtin_classify_type(*(T *)0) == 5 ? 'p' : __builtin_classify_type(*(T *)0) == 8 ? 'f' : 'i')
#define KV_ARG(T) printf(" %c%zu", KV_CLASS(T), sizeof(T));

#define KV_N(...) KV_N_(__VA_ARGS__, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define KV_N_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, n, ...) n
#define KV_CAT(a, b) KV_CAT_(a, b)
#define KV_CAT_(a, b) a##b
#define KV_STRIP(...) __VA_ARGS__
#define KV_EACH(m, args) KV_EACH_(m, KV_N args, KV_STRIP args)
#define KV_EACH_(m, n, ...) KV_CAT(KV_E, n)(m, __VA_ARGS__)
#define KV_E1(m, a) m(a)
#define KV_E2(m, a, ...) m(a) KV_E1(m, __VA_ARGS__)
#define KV_E3(m, a, ...) m(a) KV_E2(m, __VA_ARGS__)
#define KV_E4(m, a, ...) m(a) KV_E3(m, __VA_ARGS__)
#define KV_E5(m, a, ...) m(a) KV_E4(m, __VA_ARGS__)
#define KV_E6(m, a, ...) m(a) KV_E5(m, __VA_ARGS__)
#define KV_E7(m, a, ...) m(a) KV_E6(m, __VA_ARGS__)
#define KV_E8(m, a, ...) m(a) KV_E7(m, __VA_ARGS__)
#define KV_E9(m, a, ...) m(a) KV_E8(m, __VA_ARGS__)
#define KV_E10(m, a, ...) m(a) KV_E9(m, __VA_ARGS__)
#define KV_E11(m, a, ...) m(a) KV_E10(m, __VA_ARGS__)
#define KV_E12(m, a, ...) m(a) KV_E11(m, __VA_ARGS__)
#define KV_E13(m, a, ...) m(a) KV_E12(m, __VA_ARGS__)
#define KV_E14(m, a, ...) m(a) KV_E13(m, __VA_ARGS__)
#define KV_E15(m, a, ...) m(a) KV_E14(m, __VA_ARGS__)
#define KV_E16(m, a, ...) m(a) KV_E15(m, __VA_ARGS__)
#define KV_E17(m, a, ...) m(a) KV_E16(m, __VA_ARGS__)
#define KV_E18(m, a, ...) m(a) KV_E17(m, __VA_ARGS__)
#define KV_E19(m, a, ...) m(a) KV_E18(m, __VA_ARGS__)
#define KV_E20(m, a, ...) m(a) KV_E19(m, __VA_ARGS__)
#define KV_E21(m, a, ...) m(a) KV_E20(m, __VA_ARGS__)
#define KV_E22(m, a, ...) m(a) KV_E21(m, __VA_ARGS__)
#define KV_E23(m, a, ...) m(a) KV_E22(m, __VA_ARGS__)
#define KV_E24(m, a, ...) m(a) KV_E23(m, __VA_ARGS__)

#endif
