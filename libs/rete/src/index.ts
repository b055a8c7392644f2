// The rete compiler: validate, compile and plan an operator's YAML (filled by the retectl issue).
export {};
