//! Method + path-pattern routing to handler functions.
//!
//! Adding an endpoint means adding one [`Route`] in `handlers::routes()`:
//! the pattern, the handler, its permission, whether PVE proxies it to the
//! node named in the path (`proxyto`), and its parameter spec.

use crate::errors::HandlerResult;
use crate::handlers::Ctx;
use crate::perms::Perm;
use crate::schema::{MethodSchema, Prop};

pub(crate) type Handler = fn(&Ctx<'_>) -> HandlerResult;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Lit(&'static str),
    Param(&'static str),
}

pub(crate) struct Route {
    pub method: &'static str,
    pattern: Vec<Seg>,
    pub handler: Handler,
    pub perm: Perm,
    /// Path parameter naming the node PVE forwards the call to.
    pub proxyto: Option<&'static str>,
    /// `allowtoken => 0` methods refuse API tokens.
    pub allowtoken: bool,
    /// Parameters the handler accepts, path parameters included. Used to
    /// answer 400 like PVE when no `apidata.json` is loaded.
    pub spec: MethodSchema,
    /// What a node running PVE 8 checks instead, where that differs: its
    /// permission and its parameter spec (which then also overrides a
    /// loaded `apidata.json`, a PVE 9 schema).
    pub pve8: Option<(Perm, Option<MethodSchema>)>,
}

impl Route {
    pub fn new(method: &'static str, pattern: &'static str, handler: Handler) -> Route {
        let pattern = pattern
            .split('/')
            .filter(|s| !s.is_empty())
            .map(
                |s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    Some(name) => Seg::Param(name),
                    None => Seg::Lit(s),
                },
            )
            .collect();
        Route {
            method,
            pattern,
            handler,
            perm: Perm::All,
            proxyto: None,
            allowtoken: true,
            spec: MethodSchema::strict(vec![]),
            pve8: None,
        }
    }

    pub fn get(pattern: &'static str, handler: Handler) -> Route {
        Route::new("GET", pattern, handler)
    }

    pub fn post(pattern: &'static str, handler: Handler) -> Route {
        Route::new("POST", pattern, handler)
    }

    pub fn put(pattern: &'static str, handler: Handler) -> Route {
        Route::new("PUT", pattern, handler)
    }

    pub fn delete(pattern: &'static str, handler: Handler) -> Route {
        Route::new("DELETE", pattern, handler)
    }

    /// A spec that checks the listed parameters and admits others.
    pub fn lenient_params(mut self, props: Vec<(&str, Prop)>) -> Route {
        self.spec = MethodSchema::lenient(props);
        self
    }

    pub fn perm(mut self, p: Perm) -> Route {
        self.perm = p;
        self
    }

    pub fn proxy(mut self, param: &'static str) -> Route {
        self.proxyto = Some(param);
        self
    }

    pub fn no_token(mut self) -> Route {
        self.allowtoken = false;
        self
    }

    /// PVE 8's permission, and its parameters when they differ.
    pub fn pve8(mut self, perm: Perm, props: Option<Vec<(&str, Prop)>>) -> Route {
        self.pve8 = Some((perm, props.map(MethodSchema::strict)));
        self
    }

    /// The permission a node checks (`pve8`: it runs PVE 8).
    pub fn perm_on(&self, pve8: bool) -> Perm {
        match &self.pve8 {
            Some((perm, _)) if pve8 => *perm,
            _ => self.perm,
        }
    }

    /// PVE 8's own parameter spec, when the route has one.
    pub fn pve8_spec(&self) -> Option<&MethodSchema> {
        self.pve8.as_ref().and_then(|(_, spec)| spec.as_ref())
    }

    pub fn params(mut self, props: Vec<(&str, Prop)>) -> Route {
        self.spec = MethodSchema::strict(props);
        self
    }

    /// Matches decoded segments; returns captured path parameters.
    fn capture(&self, segments: &[String]) -> Option<Vec<(String, String)>> {
        if segments.len() != self.pattern.len() {
            return None;
        }
        let mut out = Vec::new();
        for (seg, pat) in segments.iter().zip(&self.pattern) {
            match pat {
                Seg::Lit(l) if l == seg => {}
                Seg::Lit(_) => return None,
                Seg::Param(name) => out.push((name.to_string(), seg.clone())),
            }
        }
        Some(out)
    }

    /// Literal segments rank above parameters, position by position, like
    /// PVE's tree walk.
    fn rank(&self) -> Vec<bool> {
        self.pattern
            .iter()
            .map(|s| matches!(s, Seg::Lit(_)))
            .collect()
    }
}

pub(crate) enum RouteMatch<'a> {
    Found(&'a Route, Vec<(String, String)>),
    NotFound,
}

pub(crate) struct Router {
    routes: Vec<Route>,
}

impl Router {
    pub fn new(routes: Vec<Route>) -> Router {
        Router { routes }
    }

    pub fn find(&self, method: &str, segments: &[String]) -> RouteMatch<'_> {
        let best = self
            .routes
            .iter()
            .filter(|r| r.capture(segments).is_some())
            .max_by_key(|r| r.rank());
        let Some(best) = best else {
            return RouteMatch::NotFound;
        };
        // The path resolves first; the method must exist on that very path.
        self.routes
            .iter()
            .filter(|r| r.pattern == best.pattern && r.method == method)
            .find_map(|r| r.capture(segments).map(|c| RouteMatch::Found(r, c)))
            .unwrap_or(RouteMatch::NotFound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::Reply;

    fn h(_: &Ctx<'_>) -> HandlerResult {
        Ok(Reply::Data(serde_json::Value::Null))
    }

    fn segs(p: &str) -> Vec<String> {
        p.split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn literal_wins_and_method_matters() {
        let r = Router::new(vec![
            Route::get("/nodes/{node}/qemu/{vmid}", h),
            Route::get("/nodes/{node}/qemu/special", h),
            Route::post("/nodes/{node}/qemu", h),
        ]);
        match r.find("GET", &segs("/nodes/pve1/qemu/special")) {
            RouteMatch::Found(route, caps) => {
                assert_eq!(route.pattern.last(), Some(&Seg::Lit("special")));
                assert_eq!(caps, vec![("node".to_string(), "pve1".to_string())]);
            }
            RouteMatch::NotFound => panic!("no match"),
        }
        assert!(matches!(
            r.find("GET", &segs("/nodes/pve1/qemu")),
            RouteMatch::NotFound
        ));
        assert!(matches!(
            r.find("POST", &segs("/nodes/pve1/qemu")),
            RouteMatch::Found(..)
        ));
    }
}
