# Reference values for dbscope-core's comparison statistics (crates/core/src/stats/):
# Welch t-test, Wilcoxon rank-sum test with continuity correction, Hodges-Lehmann shift,
# summary() and type-7 quantiles, pt/qt, and format.pval as print.htest shows it.
#
# Produced with (R 4.2.2, Debian r-base-core), from the repository root:
#   Rscript reference/r/compare.R > reference/r/compare.out
# The script writes the sample data to reference/r/data/*.csv (one value per line, no header) the
# first time and reads them back, so the committed files are exactly what R computed on.
# Output lines: `<pair> <key> <value>`, values printed with 17 significant digits.

dir <- "reference/r/data"
g <- function(v) sprintf("%.17g", v)
make <- function(name, x, y) {
  fx <- file.path(dir, paste0(name, "_a.csv")); fy <- file.path(dir, paste0(name, "_b.csv"))
  if (!file.exists(fx)) writeLines(g(x), fx)
  if (!file.exists(fy)) writeLines(g(y), fy)
  list(a = scan(fx, quiet = TRUE), b = scan(fy, quiet = TRUE))
}

set.seed(8)
pairs <- list(
  # heavy-tailed: log-normal latencies (µs) with a few huge stalls; B is 5% slower.
  heavy = make("heavy",
    round(c(rlnorm(195, log(500), 0.35), c(25000, 41000, 120000, 7000, 9000)), 3),
    round(c(rlnorm(246, log(525), 0.35), c(30000, 52000, 800, 15000)), 3)),
  # ties: integer latencies from a small range, many equal values within and across samples.
  ties = make("ties", sample(10:30, 60, replace = TRUE), sample(12:32, 45, replace = TRUE)),
  # the smallest valid input: two values each.
  n2 = make("n2", c(10, 12), c(11, 15)),
  # a large clear shift: p-values below 2.2e-16 and a big Welch df.
  big = make("big", round(rlnorm(5000, log(500), 0.3), 3), round(rlnorm(5000, log(540), 0.3), 3))
)

for (name in names(pairs)) {
  a <- pairs[[name]]$a; b <- pairs[[name]]$b
  # dbscope compares B against A: t.test(B, A) estimates mean(B) - mean(A).
  tt <- t.test(b, a)
  wt <- wilcox.test(b, a, exact = FALSE, correct = TRUE)
  cat(name, "t", g(tt$statistic), "\n")
  cat(name, "df", g(tt$parameter), "\n")
  cat(name, "t_p", g(tt$p.value), "\n")
  cat(name, "t_p_fmt", format.pval(tt$p.value, digits = 4), "\n")
  cat(name, "ci_lo", g(tt$conf.int[1]), "\n")
  cat(name, "ci_hi", g(tt$conf.int[2]), "\n")
  cat(name, "mean_a", g(mean(a)), "\n")
  cat(name, "mean_b", g(mean(b)), "\n")
  cat(name, "sd_a", g(sd(a)), "\n")
  cat(name, "sd_b", g(sd(b)), "\n")
  cat(name, "W", g(wt$statistic), "\n")
  cat(name, "w_p", g(wt$p.value), "\n")
  cat(name, "w_p_fmt", format.pval(wt$p.value, digits = 4), "\n")
  cat(name, "hl", g(median(outer(b, a, "-"))), "\n")
  s <- summary(a); cat(name, "summary_a", g(as.numeric(s)), "\n")
  s <- summary(b); cat(name, "summary_b", g(as.numeric(s)), "\n")
  q <- quantile(b, c(0.5, 0.9, 0.99, 0.999)); cat(name, "quantiles_b", g(as.numeric(q)), "\n")
}

# The t distribution, including R's normal approximation for df > 4e5 (nmath/pt.c).
for (df in c(1, 2.5, 30, 1234.5, 4e5 + 1, 7977922)) {
  cat("pt", g(df), g(c(pt(-0.3, df), pt(-2.5, df), pt(-9, df), qt(0.975, df))), "\n")
}
# pnorm tails as the rank test uses them.
cat("pnorm", g(c(pnorm(-1), pnorm(-5), pnorm(-20), pnorm(-37))), "\n")
# How print.htest shows p-values.
cat("fmt", sapply(c(0.5, 0.04321987, 1.234e-5, 3e-17), format.pval, digits = 4), sep = "|")
cat("\n")
