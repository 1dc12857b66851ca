//! The transaction mix: New-Order 45, Payment 43, Order-Status, Delivery and Stock-Level 4 each by
//! default (clause 5.2.3's minimums with New-Order taking the rest), `--mix` to change it.

use crate::spec::Error;

/// The five transaction types of clauses 2.4–2.8.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TxKind {
    NewOrder,
    Payment,
    OrderStatus,
    Delivery,
    StockLevel,
}

impl TxKind {
    /// In `--mix` order.
    pub const ALL: [TxKind; 5] = [
        TxKind::NewOrder,
        TxKind::Payment,
        TxKind::OrderStatus,
        TxKind::Delivery,
        TxKind::StockLevel,
    ];

    /// The event name a transaction of this type is recorded under.
    pub fn name(self) -> &'static str {
        match self {
            TxKind::NewOrder => "new_order",
            TxKind::Payment => "payment",
            TxKind::OrderStatus => "order_status",
            TxKind::Delivery => "delivery",
            TxKind::StockLevel => "stock_level",
        }
    }

    /// Clause 5.2.5.7: the minimum keying time, seconds (the time to enter the input screen).
    pub fn keying_s(self) -> f64 {
        match self {
            TxKind::NewOrder => 18.0,
            TxKind::Payment => 3.0,
            TxKind::OrderStatus | TxKind::Delivery | TxKind::StockLevel => 2.0,
        }
    }

    /// Clause 5.2.5.7: the mean of the think time's distribution, seconds (the minimum mean the
    /// specification allows).
    pub fn think_mean_s(self) -> f64 {
        match self {
            TxKind::NewOrder | TxKind::Payment => 12.0,
            TxKind::OrderStatus => 10.0,
            TxKind::Delivery | TxKind::StockLevel => 5.0,
        }
    }
}

/// Percentages of the five types, in [`TxKind::ALL`] order; they add up to 100.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mix([u32; 5]);

impl Default for Mix {
    fn default() -> Self {
        Mix([45, 43, 4, 4, 4])
    }
}

impl std::str::FromStr for Mix {
    type Err = Error;
    /// `45,43,4,4,4`: five whole percentages adding up to 100.
    fn from_str(s: &str) -> Result<Mix, Error> {
        let bad = |why: String| Error::Mix {
            given: s.to_string(),
            why,
        };
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        if parts.len() != 5 {
            return Err(bad(format!(
                "expected five percentages (new_order,payment,order_status,delivery,stock_level), got {}",
                parts.len()
            )));
        }
        let mut p = [0u32; 5];
        for (i, part) in parts.iter().enumerate() {
            p[i] = part.parse().map_err(|_| {
                bad(format!(
                    "{} percentage {part:?} is not a whole number from 0 to 100",
                    TxKind::ALL[i].name()
                ))
            })?;
        }
        let sum: u32 = p.iter().sum();
        if sum != 100 {
            return Err(bad(format!("the percentages add up to {sum}, not 100")));
        }
        Ok(Mix(p))
    }
}

impl Mix {
    /// The percentage of `kind`.
    pub fn percent(&self, kind: TxKind) -> u32 {
        self.0[TxKind::ALL.iter().position(|k| *k == kind).unwrap_or(0)]
    }

    /// The type a draw `r` uniform in 0..100 picks.
    pub fn pick(&self, r: u32) -> TxKind {
        let mut acc = 0;
        for (i, p) in self.0.iter().enumerate() {
            acc += p;
            if r < acc {
                return TxKind::ALL[i];
            }
        }
        // r ≥ 100 is the caller's bug; the last type with a share takes it.
        TxKind::ALL[self.0.iter().rposition(|p| *p > 0).unwrap_or(0)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_parsed() {
        assert_eq!("45,43,4,4,4".parse::<Mix>(), Ok(Mix::default()));
        let m: Mix = "100,0,0,0,0".parse().unwrap();
        assert!((0..100).all(|r| m.pick(r) == TxKind::NewOrder));
        let d = Mix::default();
        assert_eq!(d.pick(44), TxKind::NewOrder);
        assert_eq!(d.pick(45), TxKind::Payment);
        assert_eq!(d.pick(88), TxKind::OrderStatus);
        assert_eq!(d.pick(99), TxKind::StockLevel);
        assert_eq!(d.percent(TxKind::Payment), 43);
    }

    #[test]
    fn bad_mixes_say_why() {
        let e = "45,43,4,4,5".parse::<Mix>().unwrap_err().to_string();
        assert!(e.contains("add up to 101"), "{e}");
        let e = "45,43,4,4".parse::<Mix>().unwrap_err().to_string();
        assert!(e.contains("five percentages"), "{e}");
        let e = "45,x,4,4,4".parse::<Mix>().unwrap_err().to_string();
        assert!(e.contains("payment percentage \"x\""), "{e}");
        assert!(crate::spec::warehouses(0).is_err());
        assert_eq!(crate::spec::warehouses(2), Ok(2));
    }
}
