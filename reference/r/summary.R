# Reference values for dbscope-core's stats tests (crates/core/src/stats.rs).
# Produced with: Rscript reference/r/summary.R   (R 4.2.2, Debian r-base-core)
x <- c(3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5)
print(summary(x)); print(quantile(x, c(.9, .99))); print(sd(x), digits = 10)
print(format(c(1.0, 452.0, 500.0, 542.4, 567.0, 3999.0), digits = 4))
print(format(c(1, 12345.6), digits = 4))
print(format(c(0.012345, 1.5), digits = 4))
print(summary(c(1, 1e7)))
print(summary(c(1.5, 2, 1e6)))
