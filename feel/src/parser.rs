//! Recursive-descent parser for FEEL expressions, from lowest precedence to highest:
//! `if`/`for`/`some`/`every` → `or` → `and` → comparison (`=`, `<`, `between`, `in`,
//! `instance of`) → `+ -` → `* /` → `**` → unary `-` → postfix (`.name`, `[filter]`)
//! → primary (literals, names, calls, lists, ranges, contexts, parentheses).

use std::collections::HashSet;
use std::sync::Arc;

use rust_decimal::Decimal;

use crate::ast::{
    Arguments, ArithmeticOp, CompareOp, Expr, Lambda, RangeExpr, TypeName, UnaryTest, free_names,
};
use crate::builtins::Builtin;
use crate::functions;
use crate::lexer::{Spanned, Symbol, Token, tokenize};

/// Deeper nesting (parentheses, lists, calls, `if` inside `if` …) is rejected: it keeps
/// parsing and evaluation recursion well inside a thread's stack (a nesting level costs
/// ~20 KB of stack in a debug build), and no real expression comes close.
const MAX_NESTING: usize = 40;

/// Operator chains (`a + b + c …`) nest the tree too, but cost less stack per link.
const MAX_CHAIN: usize = 256;

const KEYWORDS: &[&str] = &[
    "and",
    "or",
    "if",
    "then",
    "else",
    "for",
    "in",
    "return",
    "some",
    "every",
    "satisfies",
    "between",
    "instance",
    "of",
    "true",
    "false",
    "null",
    "function",
];

pub(crate) fn parse(source: &str) -> Result<Expr, String> {
    let tokens = tokenize(source)?;
    if tokens.is_empty() {
        return Err("the expression is empty".to_owned());
    }
    let mut parser = Parser {
        tokens,
        position: 0,
        depth: 0,
        chain: 0,
        source_chars: source.chars().count(),
        bound: Vec::new(),
    };
    let expr = parser.expression()?;
    if let Some(token) = parser.tokens.get(parser.position) {
        return Err(format!(
            "unexpected {} at position {}",
            describe(&token.token),
            token.offset
        ));
    }
    Ok(expr)
}

/// Unary tests as a decision table's input entry holds them: `-` (any input), a
/// comma-separated list of tests (`< 5, [10..20], "gold"`), or such a list in `not(…)`.
/// Returns `None` for `-`, else whether the list is negated and its tests.
pub(crate) fn parse_unary_tests(source: &str) -> Result<Option<(bool, Vec<UnaryTest>)>, String> {
    let mut tokens = tokenize(source)?;
    if tokens.is_empty() {
        return Err("the unary tests are empty (write '-' to match any input)".to_owned());
    }
    if tokens.len() == 1 && tokens[0].token == Token::Symbol(Symbol::Minus) {
        return Ok(None);
    }
    let negated = tokens.len() > 3
        && matches!(&tokens[0].token, Token::Name(name) if name == "not")
        && tokens[1].token == Token::Symbol(Symbol::OpenParen)
        && tokens.last().map(|t| &t.token) == Some(&Token::Symbol(Symbol::CloseParen))
        && closing_parenthesis(&tokens, 1) == Some(tokens.len() - 1);
    if negated {
        tokens.pop();
        tokens.drain(..2);
    }
    let mut parser = Parser {
        tokens,
        position: 0,
        depth: 0,
        chain: 0,
        source_chars: source.chars().count(),
        bound: Vec::new(),
    };
    let mut tests = vec![parser.input_entry_test()?];
    while parser.eat_symbol(Symbol::Comma) {
        tests.push(parser.input_entry_test()?);
    }
    if let Some(token) = parser.tokens.get(parser.position) {
        return Err(format!(
            "unexpected {} at position {}",
            describe(&token.token),
            token.offset
        ));
    }
    Ok(Some((negated, tests)))
}

/// The index of the `)` that closes the `(` at `open`.
fn closing_parenthesis(tokens: &[Spanned], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (index, token) in tokens.iter().enumerate().skip(open) {
        match token.token {
            Token::Symbol(Symbol::OpenParen) => depth += 1,
            Token::Symbol(Symbol::CloseParen) => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(index);
                }
            }
            _ => {}
        }
    }
    None
}

fn describe(token: &Token) -> String {
    match token {
        Token::Number(text) => format!("number '{text}'"),
        Token::String(text) => format!("string \"{text}\""),
        Token::Name(text) | Token::QuotedName(text) => format!("'{text}'"),
        Token::Temporal(text) => format!("temporal literal @\"{text}\""),
        Token::Symbol(symbol) => format!("'{}'", symbol.text()),
    }
}

struct Parser {
    tokens: Vec<Spanned>,
    position: usize,
    depth: usize,
    chain: usize,
    source_chars: usize,
    /// Names bound where the parser stands (context entries written so far, loop
    /// variables, function parameters): only these can be called as functions besides
    /// the built-ins, since variables (JSON) never hold a function.
    bound: Vec<String>,
}

type Parsed = Result<Expr, String>;

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.position).map(|t| &t.token)
    }

    fn peek_at(&self, ahead: usize) -> Option<&Token> {
        self.tokens.get(self.position + ahead).map(|t| &t.token)
    }

    fn advance(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.position).map(|t| t.token.clone());
        if token.is_some() {
            self.position += 1;
        }
        token
    }

    fn at_symbol(&self, symbol: Symbol) -> bool {
        self.peek() == Some(&Token::Symbol(symbol))
    }

    fn at_word(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Token::Name(name)) if name == word)
    }

    fn eat_symbol(&mut self, symbol: Symbol) -> bool {
        let found = self.at_symbol(symbol);
        if found {
            self.position += 1;
        }
        found
    }

    fn eat_word(&mut self, word: &str) -> bool {
        let found = self.at_word(word);
        if found {
            self.position += 1;
        }
        found
    }

    /// Describes where the parser stands, for "expected …" messages.
    fn here(&self) -> String {
        match self.tokens.get(self.position) {
            Some(token) => format!(
                "found {} at position {}",
                describe(&token.token),
                token.offset
            ),
            None => format!(
                "found the end of the expression at position {}",
                self.source_chars
            ),
        }
    }

    fn expect_symbol(&mut self, symbol: Symbol) -> Result<(), String> {
        if self.eat_symbol(symbol) {
            Ok(())
        } else {
            Err(format!("expected '{}' but {}", symbol.text(), self.here()))
        }
    }

    fn expect_word(&mut self, word: &str) -> Result<(), String> {
        if self.eat_word(word) {
            Ok(())
        } else {
            Err(format!("expected '{word}' but {}", self.here()))
        }
    }

    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(format!(
                "the expression is nested too deeply (more than {MAX_NESTING} levels)"
            ));
        }
        Ok(())
    }

    fn leave(&mut self, levels: usize) {
        self.depth -= levels;
    }

    fn enter_chain(&mut self) -> Result<(), String> {
        self.chain += 1;
        if self.chain > MAX_CHAIN {
            return Err(format!(
                "the expression chains too many operators (more than {MAX_CHAIN})"
            ));
        }
        Ok(())
    }

    fn leave_chain(&mut self, links: usize) {
        self.chain -= links;
    }

    fn expression(&mut self) -> Parsed {
        self.enter()?;
        let result = if self.eat_word("if") {
            self.if_expression()
        } else if self.at_word("for") {
            self.position += 1;
            self.for_expression()
        } else if self.at_word("some") || self.at_word("every") {
            let every = self.at_word("every");
            self.position += 1;
            self.quantified(every)
        } else {
            self.disjunction()
        };
        self.leave(1);
        result
    }

    fn if_expression(&mut self) -> Parsed {
        let condition = self.expression()?;
        self.expect_word("then")?;
        let then = self.expression()?;
        self.expect_word("else")?;
        let otherwise = self.expression()?;
        Ok(Expr::If(
            Box::new(condition),
            Box::new(then),
            Box::new(otherwise),
        ))
    }

    fn binding_name(&mut self) -> Result<String, String> {
        match self.advance() {
            Some(Token::Name(name)) if !KEYWORDS.contains(&name.as_str()) => Ok(name),
            Some(Token::QuotedName(name)) => Ok(name),
            _ => {
                self.position = self.position.saturating_sub(1);
                Err(format!("expected a variable name but {}", self.here()))
            }
        }
    }

    fn for_expression(&mut self) -> Parsed {
        let scope = self.bound.len();
        let result = self.for_rest();
        self.bound.truncate(scope);
        result
    }

    fn for_rest(&mut self) -> Parsed {
        let mut bindings = Vec::new();
        loop {
            let name = self.binding_name()?;
            self.expect_word("in")?;
            let source = self.expression()?;
            // `for i in 1..3` iterates over the integers of a range.
            let source = if self.eat_symbol(Symbol::DotDot) {
                let end = self.expression()?;
                Expr::Range(Box::new(RangeExpr {
                    start: source,
                    start_closed: true,
                    end,
                    end_closed: true,
                }))
            } else {
                source
            };
            self.bound.push(name.clone());
            bindings.push((name, source));
            // Evaluation recurses once per binding.
            self.enter_chain()?;
            if !self.eat_symbol(Symbol::Comma) {
                break;
            }
        }
        self.leave_chain(bindings.len());
        self.expect_word("return")?;
        let body = self.expression()?;
        Ok(Expr::For(bindings, Box::new(body)))
    }

    fn quantified(&mut self, every: bool) -> Parsed {
        let scope = self.bound.len();
        let result = self.quantified_rest(every);
        self.bound.truncate(scope);
        result
    }

    fn quantified_rest(&mut self, every: bool) -> Parsed {
        let mut bindings = Vec::new();
        loop {
            let name = self.binding_name()?;
            self.expect_word("in")?;
            let source = self.expression()?;
            self.bound.push(name.clone());
            bindings.push((name, source));
            self.enter_chain()?;
            if !self.eat_symbol(Symbol::Comma) {
                break;
            }
        }
        self.leave_chain(bindings.len());
        self.expect_word("satisfies")?;
        let condition = self.expression()?;
        Ok(Expr::Quantified {
            every,
            bindings,
            condition: Box::new(condition),
        })
    }

    fn disjunction(&mut self) -> Parsed {
        let mut left = self.conjunction()?;
        let mut levels = 0;
        while self.eat_word("or") {
            self.enter_chain()?;
            levels += 1;
            let right = self.conjunction()?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        self.leave_chain(levels);
        Ok(left)
    }

    fn conjunction(&mut self) -> Parsed {
        let mut left = self.comparison()?;
        let mut levels = 0;
        while self.eat_word("and") {
            self.enter_chain()?;
            levels += 1;
            let right = self.comparison()?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
        self.leave_chain(levels);
        Ok(left)
    }

    fn compare_op(&self) -> Option<CompareOp> {
        match self.peek() {
            Some(Token::Symbol(Symbol::Equal)) => Some(CompareOp::Equal),
            Some(Token::Symbol(Symbol::NotEqual)) => Some(CompareOp::NotEqual),
            Some(Token::Symbol(Symbol::Less)) => Some(CompareOp::Less),
            Some(Token::Symbol(Symbol::LessEqual)) => Some(CompareOp::LessEqual),
            Some(Token::Symbol(Symbol::Greater)) => Some(CompareOp::Greater),
            Some(Token::Symbol(Symbol::GreaterEqual)) => Some(CompareOp::GreaterEqual),
            _ => None,
        }
    }

    fn comparison(&mut self) -> Parsed {
        let left = self.additive()?;
        if let Some(op) = self.compare_op() {
            self.position += 1;
            let right = self.additive()?;
            return Ok(Expr::Compare(op, Box::new(left), Box::new(right)));
        }
        if self.eat_word("between") {
            let low = self.additive()?;
            self.expect_word("and")?;
            let high = self.additive()?;
            return Ok(Expr::Between(Box::new(left), Box::new(low), Box::new(high)));
        }
        if self.eat_word("in") {
            let tests = self.in_tests()?;
            return Ok(Expr::In(Box::new(left), tests));
        }
        if self.eat_word("instance") {
            self.expect_word("of")?;
            let type_name = self.type_name()?;
            return Ok(Expr::InstanceOf(Box::new(left), type_name));
        }
        Ok(left)
    }

    fn type_name(&mut self) -> Result<TypeName, String> {
        let mut words: Vec<String> = Vec::new();
        // Type names have up to four words ("years and months duration").
        while let Some(Token::Name(word)) = self.peek() {
            let candidate = if words.is_empty() {
                word.clone()
            } else {
                format!("{} {word}", words.join(" "))
            };
            let is_prefix = [
                "Any",
                "Null",
                "boolean",
                "number",
                "string",
                "date",
                "time",
                "date and time",
                "days and time duration",
                "years and months duration",
                "list",
                "context",
                "range",
                "function",
            ]
            .iter()
            .any(|name| *name == candidate || name.starts_with(&format!("{candidate} ")));
            if !is_prefix {
                break;
            }
            words.push(word.clone());
            self.position += 1;
            if let Some(type_name) = TypeName::from_words(&candidate) {
                // Prefer the longer name when it continues ("date" → "date and time").
                let continues = matches!(
                    (candidate.as_str(), self.peek()),
                    ("date", Some(Token::Name(next))) if next == "and"
                ) && matches!(self.peek_at(1), Some(Token::Name(next)) if next == "time");
                if !continues {
                    return Ok(type_name);
                }
            }
        }
        Err(format!(
            "expected a type name (such as 'number' or 'string') but {}",
            self.here()
        ))
    }

    /// The right side of `in`: one test, or a parenthesised, comma-separated list.
    fn in_tests(&mut self) -> Result<Vec<UnaryTest>, String> {
        if self.at_symbol(Symbol::OpenParen) && !self.parenthesis_is_range() {
            self.position += 1;
            let mut tests = vec![self.unary_test()?];
            while self.eat_symbol(Symbol::Comma) {
                tests.push(self.unary_test()?);
            }
            self.expect_symbol(Symbol::CloseParen)?;
            return Ok(tests);
        }
        Ok(vec![self.unary_test()?])
    }

    /// Whether the `(` at the cursor opens a range like `(1..5]` rather than a group.
    fn parenthesis_is_range(&self) -> bool {
        let mut depth = 0usize;
        for token in &self.tokens[self.position..] {
            match token.token {
                Token::Symbol(Symbol::OpenParen | Symbol::OpenBracket | Symbol::OpenBrace) => {
                    depth += 1
                }
                Token::Symbol(Symbol::CloseParen | Symbol::CloseBracket | Symbol::CloseBrace) => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return false;
                    }
                }
                Token::Symbol(Symbol::DotDot) if depth == 1 => return true,
                Token::Symbol(Symbol::Comma) if depth == 1 => return false,
                _ => {}
            }
        }
        false
    }

    /// One test of an input entry: a comparison (`>= 10`) or any expression, which may
    /// read the input as `?` (`? > 5 and ? < 10`).
    fn input_entry_test(&mut self) -> Result<UnaryTest, String> {
        if let Some(op) = self.compare_op() {
            self.position += 1;
            return Ok(UnaryTest::Compare(op, self.additive()?));
        }
        Ok(UnaryTest::Value(self.expression()?))
    }

    fn unary_test(&mut self) -> Result<UnaryTest, String> {
        if let Some(op) = self.compare_op() {
            self.position += 1;
            return Ok(UnaryTest::Compare(op, self.additive()?));
        }
        Ok(UnaryTest::Value(self.additive()?))
    }

    fn additive(&mut self) -> Parsed {
        let mut left = self.multiplicative()?;
        let mut levels = 0;
        loop {
            let op = if self.eat_symbol(Symbol::Plus) {
                ArithmeticOp::Add
            } else if self.eat_symbol(Symbol::Minus) {
                ArithmeticOp::Subtract
            } else {
                break;
            };
            self.enter_chain()?;
            levels += 1;
            let right = self.multiplicative()?;
            left = Expr::Arithmetic(op, Box::new(left), Box::new(right));
        }
        self.leave_chain(levels);
        Ok(left)
    }

    fn multiplicative(&mut self) -> Parsed {
        let mut left = self.power()?;
        let mut levels = 0;
        loop {
            let op = if self.eat_symbol(Symbol::Star) {
                ArithmeticOp::Multiply
            } else if self.eat_symbol(Symbol::Slash) {
                ArithmeticOp::Divide
            } else {
                break;
            };
            self.enter_chain()?;
            levels += 1;
            let right = self.power()?;
            left = Expr::Arithmetic(op, Box::new(left), Box::new(right));
        }
        self.leave_chain(levels);
        Ok(left)
    }

    fn power(&mut self) -> Parsed {
        let mut left = self.unary()?;
        let mut levels = 0;
        while self.eat_symbol(Symbol::StarStar) {
            self.enter_chain()?;
            levels += 1;
            let right = self.unary()?;
            left = Expr::Arithmetic(ArithmeticOp::Power, Box::new(left), Box::new(right));
        }
        self.leave_chain(levels);
        Ok(left)
    }

    fn unary(&mut self) -> Parsed {
        if self.eat_symbol(Symbol::Minus) {
            self.enter_chain()?;
            let operand = self.unary();
            self.leave_chain(1);
            return Ok(match operand? {
                Expr::Number(number) => Expr::Number(-number),
                other => Expr::Negate(Box::new(other)),
            });
        }
        self.postfix()
    }

    fn postfix(&mut self) -> Parsed {
        let mut expr = self.primary()?;
        let mut levels = 0;
        loop {
            if self.eat_symbol(Symbol::Dot) {
                self.enter_chain()?;
                levels += 1;
                let name = match self.advance() {
                    Some(Token::Name(name)) => self.multi_word_property(name),
                    Some(Token::QuotedName(name)) => name,
                    _ => {
                        self.position = self.position.saturating_sub(1);
                        return Err(format!("expected a name after '.' but {}", self.here()));
                    }
                };
                expr = match expr {
                    Expr::Name(root) => Expr::NamePath(root, vec![name]),
                    Expr::NamePath(root, mut keys) => {
                        keys.push(name);
                        Expr::NamePath(root, keys)
                    }
                    other => Expr::Path(Box::new(other), name),
                };
            } else if self.at_symbol(Symbol::OpenBracket) && self.opens_filter() {
                self.position += 1;
                self.enter_chain()?;
                levels += 1;
                let filter = self.expression()?;
                self.expect_symbol(Symbol::CloseBracket)?;
                expr = Expr::Filter(Box::new(expr), Box::new(filter));
            } else if self.at_symbol(Symbol::OpenParen) {
                // Calling what the expression so far evaluates to: `(function(x) x)(1)`,
                // `fns.double(2)`.
                if let Expr::Name(name) = &expr
                    && !self.is_bound(name)
                {
                    // `` `string length`("a") ``: a quoted name is a name like another.
                    expr = self.call(&name.clone())?;
                    continue;
                }
                self.enter_chain()?;
                levels += 1;
                let arguments = self.arguments()?;
                expr = Expr::Apply(Box::new(expr), arguments);
            } else {
                break;
            }
        }
        self.leave_chain(levels);
        Ok(expr)
    }

    /// Whether the `[` at the cursor opens a filter (`xs[item > 1]`). After a range's end
    /// it may instead close the range, excluding the end (`[1..10[`, `]1..x[`): then no
    /// expression follows it.
    fn opens_filter(&self) -> bool {
        const FOLLOWS_AN_EXPRESSION: &[&str] = &[
            "and",
            "or",
            "then",
            "else",
            "return",
            "satisfies",
            "in",
            "between",
            "instance",
        ];
        match self.peek_at(1) {
            None => false,
            Some(Token::Symbol(symbol)) => matches!(
                symbol,
                Symbol::OpenParen | Symbol::OpenBracket | Symbol::OpenBrace | Symbol::Minus
            ),
            Some(Token::Name(word)) => !FOLLOWS_AN_EXPRESSION.contains(&word.as_str()),
            Some(_) => true,
        }
    }

    /// Joins `time offset`, `start included`, `end included` after a `.`.
    fn multi_word_property(&mut self, first: String) -> String {
        const SECOND_WORDS: &[(&str, &str)] = &[
            ("time", "offset"),
            ("start", "included"),
            ("end", "included"),
        ];
        for (word, second) in SECOND_WORDS {
            if first == *word && self.at_word(second) {
                self.position += 1;
                return format!("{first} {second}");
            }
        }
        first
    }

    fn primary(&mut self) -> Parsed {
        let Some(token) = self.advance() else {
            return Err(format!("expected a value but {}", self.here()));
        };
        match token {
            Token::Number(text) => parse_number(&text).map(Expr::Number),
            Token::String(text) => Ok(Expr::String(text)),
            Token::QuotedName(name) => Ok(Expr::Name(name)),
            Token::Temporal(text) => functions::temporal_literal(&text)
                .map(Expr::Constant)
                .map_err(|reason| format!("invalid temporal literal @\"{text}\": {reason}")),
            Token::Name(word) => self.name_or_call(word),
            Token::Symbol(Symbol::OpenParen) => {
                let first = self.expression()?;
                if self.eat_symbol(Symbol::DotDot) {
                    return self.range_rest(first, false);
                }
                self.expect_symbol(Symbol::CloseParen)?;
                Ok(first)
            }
            Token::Symbol(Symbol::OpenBracket) => self.list_or_range(),
            Token::Symbol(Symbol::CloseBracket) => {
                // `]1..5]`: a range open at the start.
                let start = self.expression()?;
                self.expect_symbol(Symbol::DotDot)?;
                self.range_rest(start, false)
            }
            Token::Symbol(Symbol::OpenBrace) => self.context(),
            Token::Symbol(_) => {
                self.position -= 1;
                Err(format!("expected a value but {}", self.here()))
            }
        }
    }

    fn list_or_range(&mut self) -> Parsed {
        if self.eat_symbol(Symbol::CloseBracket) {
            return Ok(Expr::List(Vec::new()));
        }
        let first = self.expression()?;
        if self.eat_symbol(Symbol::DotDot) {
            return self.range_rest(first, true);
        }
        let mut items = vec![first];
        while self.eat_symbol(Symbol::Comma) {
            items.push(self.expression()?);
        }
        self.expect_symbol(Symbol::CloseBracket)?;
        Ok(Expr::List(items))
    }

    /// After `start ..`: the end and the closing `]`, `)` or `[`.
    fn range_rest(&mut self, start: Expr, start_closed: bool) -> Parsed {
        let end = self.expression()?;
        let end_closed = if self.eat_symbol(Symbol::CloseBracket) {
            true
        } else if self.eat_symbol(Symbol::CloseParen) || self.eat_symbol(Symbol::OpenBracket) {
            false
        } else {
            return Err(format!(
                "expected ']', ')' or '[' to close the range but {}",
                self.here()
            ));
        };
        Ok(Expr::Range(Box::new(RangeExpr {
            start,
            start_closed,
            end,
            end_closed,
        })))
    }

    fn context(&mut self) -> Parsed {
        let scope = self.bound.len();
        let result = self.context_entries();
        self.bound.truncate(scope);
        result
    }

    fn context_entries(&mut self) -> Parsed {
        let mut entries: Vec<(String, Expr)> = Vec::new();
        // Keys seen, so a context of many entries is checked for duplicates in linear time.
        let mut keys: HashSet<String> = HashSet::new();
        if self.eat_symbol(Symbol::CloseBrace) {
            return Ok(Expr::Context(entries));
        }
        loop {
            let key = match self.advance() {
                Some(Token::String(key) | Token::QuotedName(key)) => key,
                Some(Token::Name(first)) => {
                    // Keys may have several words: `{first name: "Ada"}`.
                    let mut key = first;
                    while let Some(Token::Name(word)) = self.peek() {
                        key.push(' ');
                        key.push_str(word);
                        self.position += 1;
                    }
                    key
                }
                _ => {
                    self.position = self.position.saturating_sub(1);
                    return Err(format!("expected a context key but {}", self.here()));
                }
            };
            if !keys.insert(key.clone()) {
                return Err(format!("the context has the key '{key}' twice"));
            }
            self.expect_symbol(Symbol::Colon)?;
            let value = self.expression()?;
            // Later entries see this one: `{f: function(x) x + 1, r: f(2)}`.
            self.bound.push(key.clone());
            entries.push((key, value));
            if !self.eat_symbol(Symbol::Comma) {
                break;
            }
        }
        self.expect_symbol(Symbol::CloseBrace)?;
        Ok(Expr::Context(entries))
    }

    fn name_or_call(&mut self, word: String) -> Parsed {
        match word.as_str() {
            "true" => return Ok(Expr::Bool(true)),
            "false" => return Ok(Expr::Bool(false)),
            "null" => return Ok(Expr::Null),
            "if" => return self.if_expression(),
            "for" => return self.for_expression(),
            "some" => return self.quantified(false),
            "every" => return self.quantified(true),
            "function" => return self.function_literal(),
            // FEEL-Scala's older names of `all` and `any`: `and([a, b])`, `or(a, b)`.
            "and" | "or" if self.at_symbol(Symbol::OpenParen) => return self.call(&word),
            _ => {}
        }
        // Multi-word built-ins (`date and time(`, `string length(`) win over names.
        for words in Builtin::multi_word_names(&word) {
            let rest_matches = words[1..].iter().enumerate().all(|(index, expected)| {
                matches!(self.peek_at(index), Some(Token::Name(actual)) if actual == expected)
            });
            let call_follows = matches!(
                self.peek_at(words.len() - 1),
                Some(Token::Symbol(Symbol::OpenParen))
            );
            if rest_matches && call_follows {
                self.position += words.len() - 1;
                return self.call(&words.join(" "));
            }
        }
        if KEYWORDS.contains(&word.as_str()) {
            self.position -= 1;
            return Err(format!("expected a value but {}", self.here()));
        }
        if self.at_symbol(Symbol::OpenParen) {
            if Builtin::lookup(&word).is_none() && self.is_bound(&word) {
                self.enter_chain()?;
                let arguments = self.arguments();
                self.leave_chain(1);
                return Ok(Expr::Apply(Box::new(Expr::Name(word)), arguments?));
            }
            return self.call(&word);
        }
        Ok(Expr::Name(word))
    }

    /// Whether `name` is bound here (searched from the innermost binding, which is
    /// usually the one called).
    fn is_bound(&self, name: &str) -> bool {
        self.bound.iter().rev().any(|bound| bound == name)
    }

    /// After `function`: `(a, b: number) body`.
    fn function_literal(&mut self) -> Parsed {
        self.expect_symbol(Symbol::OpenParen)?;
        let mut params: Vec<(String, Option<TypeName>)> = Vec::new();
        if !self.eat_symbol(Symbol::CloseParen) {
            loop {
                let name = self.binding_name()?;
                if params.iter().any(|(existing, _)| *existing == name) {
                    return Err(format!("the function has the parameter '{name}' twice"));
                }
                let declared = if self.eat_symbol(Symbol::Colon) {
                    Some(self.type_name()?)
                } else {
                    None
                };
                params.push((name, declared));
                if !self.eat_symbol(Symbol::Comma) {
                    break;
                }
            }
            self.expect_symbol(Symbol::CloseParen)?;
        }
        if self.at_word("external") {
            return Err(
                "external functions (Java or PMML) are not supported; define the function in FEEL"
                    .to_owned(),
            );
        }
        let scope = self.bound.len();
        self.bound
            .extend(params.iter().map(|(name, _)| name.clone()));
        let body = self.expression();
        self.bound.truncate(scope);
        let body = body?;
        let mut free = Vec::new();
        let mut names: Vec<String> = params.iter().map(|(name, _)| name.clone()).collect();
        free_names(&body, &mut names, &mut free);
        free.sort();
        free.dedup();
        Ok(Expr::Function(Arc::new(Lambda { params, body, free })))
    }

    /// A parenthesised argument list: all positional (`(1, 2)`) or all named
    /// (`(start position: 2, string: "abc")`; a name may have several words).
    fn arguments(&mut self) -> Result<Arguments, String> {
        self.expect_symbol(Symbol::OpenParen)?;
        let mut positional = Vec::new();
        let mut named: Vec<(String, Expr)> = Vec::new();
        if !self.eat_symbol(Symbol::CloseParen) {
            loop {
                match self.argument_name() {
                    Some(name) => {
                        if !positional.is_empty() {
                            return Err(format!(
                                "the argument '{name}' is named but an earlier one is not; name all arguments or none"
                            ));
                        }
                        if named.iter().any(|(existing, _)| *existing == name) {
                            return Err(format!("the argument '{name}' is given twice"));
                        }
                        let value = self.expression()?;
                        named.push((name, value));
                    }
                    None => {
                        if let Some((name, _)) = named.first() {
                            return Err(format!(
                                "an argument after the named argument '{name}' has no name; name all arguments or none"
                            ));
                        }
                        positional.push(self.expression()?);
                    }
                }
                if !self.eat_symbol(Symbol::Comma) {
                    break;
                }
            }
            self.expect_symbol(Symbol::CloseParen)?;
        }
        Ok(if named.is_empty() {
            Arguments::Positional(positional)
        } else {
            Arguments::Named(named)
        })
    }

    /// At `start position:` (names then a colon): consumes them and returns the name.
    fn argument_name(&mut self) -> Option<String> {
        let mut words = 0;
        while let Some(Token::Name(_) | Token::QuotedName(_)) = self.peek_at(words) {
            words += 1;
        }
        if words == 0 || self.peek_at(words) != Some(&Token::Symbol(Symbol::Colon)) {
            return None;
        }
        let mut parts = Vec::with_capacity(words);
        for _ in 0..words {
            if let Some(Token::Name(word) | Token::QuotedName(word)) = self.advance() {
                parts.push(word);
            }
        }
        self.position += 1;
        Some(parts.join(" "))
    }

    fn call(&mut self, name: &str) -> Parsed {
        let Some(builtin) = Builtin::lookup(name) else {
            return Err(format!("no function found with name '{name}'"));
        };
        let arguments = match self.arguments()? {
            Arguments::Positional(arguments) => arguments,
            Arguments::Named(arguments) => builtin.order_named(arguments, || Expr::Omitted)?,
        };
        builtin.check_arity(name, arguments.len())?;
        Ok(Expr::Call(builtin, arguments))
    }
}

fn parse_number(text: &str) -> Result<Decimal, String> {
    let parsed = if text.contains(['e', 'E']) {
        Decimal::from_scientific(text)
    } else {
        text.parse::<Decimal>()
    };
    parsed.map_err(|_| format!("the number {text} is out of range"))
}
