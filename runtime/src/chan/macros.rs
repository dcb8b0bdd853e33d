//! `select!`: the macro. It only parses arms and wires them to the engine in `select.rs`.
//!
//! Expansion, for arms `_0.._{n-1}` (identifiers from a fixed list, so every step of the
//! recursion names the same variables):
//!
//! ```text
//! {
//!     enum __Out<_0, _1, ..> { _0(_0), _1(_1), .., __Default }
//!     let __out = {
//!         let mut _0 = (rx).__recv_arm();              // or __send_arm(v), or FutArm::new(pin!(f))
//!         ..
//!         let __k = select::<_, { n }>(has_default, |k, op| { if k == 0 { return _0.handle(op); } .. false }).await;
//!         if __k == 0 { __Out::_0(_0.take()) } else if .. else { __Out::__Default }
//!     };                                               // arms (and their borrows) end here
//!     match __out { __Out::_0(pattern) => body, .., __Out::__Default => default body }
//! }
//! ```
//!
//! Bodies run outside the block that holds the arms, so they may use `break`, `continue`,
//! `return` and `?` of the enclosing code, and may move the channel ends the arms borrowed.

/// Go's `select`: waits until one of several channel operations (or futures) can proceed,
/// runs it, and evaluates that arm's body. Must be used inside `async` code.
///
/// ```text
/// select! {
///     v = recv(rx) => { .. }            // v: Option<T>; None once rx's channel is closed and drained
///     recv(rx2) => { .. }               // the same, value dropped
///     r = send(tx, value) => { .. }     // r: Result<(), SendError<T>>; Err(value back) if closed
///     send(tx2, value) => { .. }
///     out = some_future => { .. }       // any future, e.g. `_ = gmprt_runtime::time::sleep(d)`
///     default => { .. }                 // taken at once if no other arm is ready
/// }
/// ```
///
/// * **Fairness, as Go:** if several arms are ready, one is chosen uniformly at random.
/// * **Exactly one arm takes effect.** An arm that is not chosen does not receive or send:
///   a `recv` arm only takes a value when it is the chosen one, a `send` arm's value goes
///   nowhere unless chosen (it is dropped with the select). Values in the channel are never
///   lost to a select that was not chosen or was dropped.
/// * A closed channel makes its arms ready at once (`recv` with `None`, `send` with `Err`),
///   as in Go — in a loop, stop selecting on a channel once it reports closed.
/// * Channel and value expressions are evaluated once, in order, before waiting. Future arms
///   are polled only while the select polls, and dropped (cancelled) once another arm wins.
/// * Bodies run after the select has finished, in the enclosing code: `break`, `continue`,
///   `return` and `?` work as in a `match`. Patterns must be irrefutable.
/// * `recv` and `send` are keywords here: a future arm cannot be a call of a function named
///   `recv(..)` or `send(..)` (call it through a path, `self::recv(..)`, or bind it first).
/// * **Nil channels, as Go's:** `recv(opt)` / `send(opt, v)` also take an `Option` of a
///   receiver / sender (owned or borrowed); `None` is Go's nil channel, an arm that is never
///   ready — the idiom for switching an arm off, e.g. once its channel reports closed. A
///   select whose arms are all nil and has no `default` blocks for ever, as Go's.
/// * `select! {}` blocks for ever (Go's `select {}`); its type is `!`.
///
/// At most 64 arms.
///
/// ```
/// use gmprt_runtime::{chan::chan, select};
///
/// let rt = gmprt_runtime::Runtime::builder().procs(2).build().unwrap();
/// rt.block_on(async {
///     let (tx, rx) = chan::<u32>(0);
///     let (quit_tx, quit_rx) = chan::<()>(0);
///     let worker = gmprt_runtime::spawn(async move {
///         let mut got = Vec::new();
///         loop {
///             select! {
///                 v = recv(rx) => got.push(v.unwrap()),
///                 _ = recv(quit_rx) => return got,
///             }
///         }
///     });
///     for i in 0..3 {
///         tx.send(i).await.unwrap();
///     }
///     quit_tx.send(()).await.unwrap();
///     assert_eq!(worker.await.unwrap(), vec![0, 1, 2]);
///
///     // `default`: never waits.
///     let (tx, rx) = chan::<u32>(1);
///     let r = select! {
///         v = recv(rx) => v,
///         default => None,
///     };
///     assert_eq!(r, None);
///     select! {
///         r = send(tx, 7) => r.unwrap(),
///         default => unreachable!("a free buffer slot is ready"),
///     }
///     assert_eq!(rx.try_recv(), Ok(7));
/// });
/// ```
#[macro_export]
macro_rules! select {
    // Go's `select {}`: blocks for ever (the task parks and is never woken; its type is `!`).
    () => {
        match ::core::future::pending::<::core::convert::Infallible>().await {}
    };
    ($($arms:tt)+) => {
        $crate::__select_parse!(
            @arms []
            @default []
            @idx (0)
            @names [
                _0 _1 _2 _3 _4 _5 _6 _7 _8 _9 _10 _11 _12 _13 _14 _15
                _16 _17 _18 _19 _20 _21 _22 _23 _24 _25 _26 _27 _28 _29 _30 _31
                _32 _33 _34 _35 _36 _37 _38 _39 _40 _41 _42 _43 _44 _45 _46 _47
                _48 _49 _50 _51 _52 _53 _54 _55 _56 _57 _58 _59 _60 _61 _62 _63
            ]
            @rest $($arms)+
        )
    };
}

/// Parses `select!` arms, one at a time, into records `[name kind (pattern) (args) (index) body]`.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_parse {
    // All arms parsed.
    (@arms $arms:tt @default $def:tt @idx $idx:tt @names $names:tt @rest) => {
        $crate::__select_emit!(@arms $arms @default $def @n $idx)
    };

    // Arm heads. `default` first: as a pattern it would be a binding.
    (@arms $a:tt @default [] @idx $i:tt @names $n:tt @rest default => $($r:tt)+) => {
        $crate::__select_parse!(@body [default] @arms $a @default [] @idx $i @names $n @rest $($r)+)
    };
    (@arms $a:tt @default [$($d:tt)+] @idx $i:tt @names $n:tt @rest default => $($r:tt)+) => {
        ::core::compile_error!("select!: more than one `default` arm")
    };
    (@arms $a:tt @default $d:tt @idx $i:tt @names [] @rest $($r:tt)+) => {
        ::core::compile_error!("select!: at most 64 arms")
    };
    (@arms $a:tt @default $d:tt @idx $i:tt @names $n:tt @rest recv($($rx:tt)+) => $($r:tt)+) => {
        $crate::__select_parse!(@body [recv (_) ($($rx)+)] @arms $a @default $d @idx $i @names $n @rest $($r)+)
    };
    (@arms $a:tt @default $d:tt @idx $i:tt @names $n:tt @rest send($tx:expr, $v:expr $(,)?) => $($r:tt)+) => {
        $crate::__select_parse!(@body [send (_) ($tx, $v)] @arms $a @default $d @idx $i @names $n @rest $($r)+)
    };
    (@arms $a:tt @default $d:tt @idx $i:tt @names $n:tt @rest $p:pat = recv($($rx:tt)+) => $($r:tt)+) => {
        $crate::__select_parse!(@body [recv ($p) ($($rx)+)] @arms $a @default $d @idx $i @names $n @rest $($r)+)
    };
    (@arms $a:tt @default $d:tt @idx $i:tt @names $n:tt @rest $p:pat = send($tx:expr, $v:expr $(,)?) => $($r:tt)+) => {
        $crate::__select_parse!(@body [send ($p) ($tx, $v)] @arms $a @default $d @idx $i @names $n @rest $($r)+)
    };
    (@arms $a:tt @default $d:tt @idx $i:tt @names $n:tt @rest $p:pat = $f:expr => $($r:tt)+) => {
        $crate::__select_parse!(@body [fut ($p) ($f)] @arms $a @default $d @idx $i @names $n @rest $($r)+)
    };

    // Bodies: a block (comma optional) or an expression (comma unless last). As in tokio's
    // `select!`, a block body is taken as a block, so `{ .. }.method()` needs parentheses.
    (@body [default] @arms $a:tt @default [] @idx $i:tt @names $n:tt @rest $b:block, $($r:tt)*) => {
        $crate::__select_parse!(@arms $a @default [$b] @idx $i @names $n @rest $($r)*)
    };
    (@body [default] @arms $a:tt @default [] @idx $i:tt @names $n:tt @rest $b:block $($r:tt)*) => {
        $crate::__select_parse!(@arms $a @default [$b] @idx $i @names $n @rest $($r)*)
    };
    (@body [default] @arms $a:tt @default [] @idx $i:tt @names $n:tt @rest $b:expr, $($r:tt)*) => {
        $crate::__select_parse!(@arms $a @default [$b] @idx $i @names $n @rest $($r)*)
    };
    (@body [default] @arms $a:tt @default [] @idx $i:tt @names $n:tt @rest $b:expr) => {
        $crate::__select_parse!(@arms $a @default [$b] @idx $i @names $n @rest)
    };
    (@body $h:tt @arms $a:tt @default $d:tt @idx $i:tt @names $n:tt @rest $b:block, $($r:tt)*) => {
        $crate::__select_parse!(@push $h $b @arms $a @default $d @idx $i @names $n @rest $($r)*)
    };
    (@body $h:tt @arms $a:tt @default $d:tt @idx $i:tt @names $n:tt @rest $b:block $($r:tt)*) => {
        $crate::__select_parse!(@push $h $b @arms $a @default $d @idx $i @names $n @rest $($r)*)
    };
    (@body $h:tt @arms $a:tt @default $d:tt @idx $i:tt @names $n:tt @rest $b:expr, $($r:tt)*) => {
        $crate::__select_parse!(@push $h $b @arms $a @default $d @idx $i @names $n @rest $($r)*)
    };
    (@body $h:tt @arms $a:tt @default $d:tt @idx $i:tt @names $n:tt @rest $b:expr) => {
        $crate::__select_parse!(@push $h $b @arms $a @default $d @idx $i @names $n @rest)
    };
    // Record the arm under the next name and index.
    (@push [$($h:tt)+] $b:tt @arms [$($a:tt)*] @default $d:tt @idx ($($i:tt)+) @names [$n:ident $($ns:ident)*]
        @rest $($r:tt)*) => {
        $crate::__select_parse!(
            @arms [$($a)* [$n $($h)+ ($($i)+) $b]] @default $d @idx ($($i)+ + 1) @names [$($ns)*]
            @rest $($r)*
        )
    };
}

/// Emits the expansion described in the module doc of `macros.rs`.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_emit {
    (@arms [$([$n:ident $kind:ident ($($p:tt)*) ($($args:tt)*) ($($i:tt)+) $body:tt])*]
     @default [$($def:tt)?] @n ($($total:tt)+)) => {{
        #[allow(non_camel_case_types, dead_code)]
        enum __Out<$($n,)*> {
            $($n($n),)*
            __Default,
        }
        let __out = {
            $($crate::__select_arm!($kind $n ($($args)*));)*
            let __k = $crate::chan::__private::select::<_, { $($total)+ }>(
                $crate::__select_has_default!($($def)?),
                |__k, __op| {
                    $(if __k == $($i)+ {
                        return $n.handle(__op);
                    })*
                    false
                },
            )
            .await;
            $(if __k == $($i)+ { __Out::$n($n.take()) } else)* { __Out::__Default }
        };
        match __out {
            $(__Out::$n($($p)*) => $body,)*
            __Out::__Default => $crate::__select_default!($($def)?),
        }
    }};
}

/// One arm's `let`s.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_arm {
    (recv $n:ident ($($rx:tt)+)) => {
        let mut $n = {
            // For `Option`s of receivers (nil channels); a `Receiver`'s own method wins.
            #[allow(unused_imports)]
            use $crate::chan::__private::NilRecv as _;
            ($($rx)+).__recv_arm()
        };
    };
    (send $n:ident ($tx:expr, $v:expr)) => {
        let mut $n = {
            #[allow(unused_imports)]
            use $crate::chan::__private::NilSend as _;
            ($tx).__send_arm($v)
        };
    };
    (fut $n:ident ($f:expr)) => {
        let $n = ::core::pin::pin!($f);
        let mut $n = $crate::chan::__private::FutArm::new($n);
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __select_has_default {
    () => {
        false
    };
    ($def:tt) => {
        true
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __select_default {
    () => {
        ::core::unreachable!("select!: no default arm")
    };
    ($def:tt) => {
        $def
    };
}
