//! Probe: evaluates FEEL with DSNTK 0.3.0 from JSON variables, counts panics on mutated
//! inputs, and measures evaluations/s. See docs/decisions/feel.md.

use dsntk_feel::{FeelNumber, FeelScope, Name, context::FeelContext, values::Value};
use std::str::FromStr;

fn to_value(j: &serde_json::Value) -> Value {
    match j {
        serde_json::Value::Null => Value::Null(None),
        serde_json::Value::Bool(b) => Value::Boolean(*b),
        serde_json::Value::Number(n) => {
            Value::Number(FeelNumber::from_str(&n.to_string()).unwrap())
        }
        serde_json::Value::String(s) => Value::String(s.clone()),
        serde_json::Value::Array(a) => Value::List(a.iter().map(to_value).collect()),
        serde_json::Value::Object(o) => {
            let mut c = FeelContext::default();
            for (k, v) in o {
                c.set_entry(&Name::from(k.as_str()), to_value(v));
            }
            Value::Context(c)
        }
    }
}

fn eval(src: &str, vars: &serde_json::Value) -> String {
    let scope = FeelScope::default();
    let mut ctx = FeelContext::default();
    if let serde_json::Value::Object(o) = vars {
        for (k, v) in o {
            ctx.set_entry(&Name::from(k.as_str()), to_value(v));
        }
    }
    scope.push(ctx);
    match dsntk_feel_parser::parse_expression(&scope, src, false) {
        Err(e) => format!("PARSE ERR {e}"),
        Ok(ast) => {
            let ev = dsntk_feel_evaluator::prepare(&ast);
            let v = ev(&scope);
            format!("{v:?}").chars().take(200).collect()
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(|s| s.as_str()) == Some("bench") {
        let vars = serde_json::json!({"order": {"total": 1250.5, "id": "o-1"}, "x": 5});
        let scope = FeelScope::default();
        let mut ctx = FeelContext::default();
        for (k, v) in vars.as_object().unwrap() {
            ctx.set_entry(&Name::from(k.as_str()), to_value(v));
        }
        scope.push(ctx);
        let ast = dsntk_feel_parser::parse_expression(&scope, "order.total > 1000", false).unwrap();
        let ev = dsntk_feel_evaluator::prepare(&ast);
        let n = 1_000_000;
        let t = std::time::Instant::now();
        for _ in 0..n {
            let scope = FeelScope::default();
            let mut ctx = FeelContext::default();
            for (k, v) in vars.as_object().unwrap() {
                ctx.set_entry(&Name::from(k.as_str()), to_value(v));
            }
            scope.push(ctx);
            std::hint::black_box(ev(&scope));
        }
        println!(
            "json->scope each time: {:.0}/s",
            n as f64 / t.elapsed().as_secs_f64()
        );
        return;
    }
    if args.get(1).map(|s| s.as_str()) == Some("fuzz") {
        // crude: random byte mutations of seed expressions, catch panics
        let seeds = [
            "order.total > 1000",
            "date and time(\"2026-01-01T10:00:00Z\") + duration(\"P1M\")",
            "for i in 1..3 return i * 2",
            "some x in [1,2] satisfies x > 1",
            "{a: 1}.a",
            "substring(\"abc\", 2)",
            "[1,2,3][item > 1]",
            "if x then 1 else 2",
            "time(\"10:00:00@Europe/Berlin\")",
            "sum([1,2])",
            "1 in [1..3]",
            "duration(\"P1Y\") * 3",
            "string length(\"x\")",
            "number(\"1e400\")",
            "decimal(1/3, 2)",
            "date(2026, 2, 30)",
        ];
        let mut state: u64 = 42;
        let mut rnd = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let alphabet = b" ()[]{}.,:\"0123456789+-*/<>=!abcdefghijklmnopqrstuvwxyz@TPZ";
        let mut panics = 0;
        std::panic::set_hook(Box::new(|_| {}));
        let iters: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100000);
        for i in 0..iters {
            let seed = seeds[(rnd() % seeds.len() as u64) as usize];
            let mut b: Vec<u8> = seed.as_bytes().to_vec();
            for _ in 0..(rnd() % 4 + 1) {
                let pos = (rnd() % (b.len() as u64 + 1)) as usize;
                let c = alphabet[(rnd() % alphabet.len() as u64) as usize];
                match rnd() % 3 {
                    0 if pos < b.len() => {
                        b[pos] = c;
                    }
                    1 if pos < b.len() => {
                        b.remove(pos);
                    }
                    _ => b.insert(pos, c),
                }
            }
            let s = String::from_utf8_lossy(&b).to_string();
            let r = std::panic::catch_unwind(|| {
                eval(&s, &serde_json::json!({"x": 1, "order": {"total": 5}}))
            });
            if r.is_err() {
                panics += 1;
                if panics <= 15 {
                    eprintln!("PANIC #{i}: {s}");
                }
            }
        }
        println!("panics: {panics}/{iters}");
        return;
    }
    let vars: serde_json::Value =
        serde_json::from_str(args.get(2).map(|s| s.as_str()).unwrap_or("{}")).unwrap();
    for src in args[1].split(";;") {
        println!("{src:60} => {}", eval(src, &vars));
    }
}
