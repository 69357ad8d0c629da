/* kernels/lombscargle/lombscargle.h — parameter order and CPU reference of lombscargle. */
#ifndef GPUD_LOMBSCARGLE_H
#define GPUD_LOMBSCARGLE_H

#include "kernels/core/kernel.h"

enum { LS_X, LS_Y, LS_FREQS, LS_PGRAM, LS_PRECENTER, LS_NORMALIZE };

/* One frequency of the reference, y shifted by ymean; unnormalised. */
double lombscargle_ref_one(double f, const kernel_array *x, const kernel_array *y, double ymean);
/* mean(y) and dot(y, y) in float64. */
void lombscargle_ref_moments(const kernel_array *y, double *mean, double *dot);

#endif
