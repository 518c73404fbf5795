// Every document the dashboard sends, one named operation each. Pages are small enough
// that no document can ask for more than the server's default limits allow (5000
// fields, pages of at most 100): tests/http/test_dashboard_documents.py checks each one
// against schema.graphql and the cost limit.


export const NAMESPACES = `query Namespaces { namespaces }`;

export const AGENTS = `query Agents($ns: String!, $after: String) {
  agents(namespace: $ns, first: 24, after: $after) {
    pageInfo { hasNextPage endCursor }
    edges { node { id name namespace sessionless createdAt latestVersion { number label } } }
  }
}`;

export const AGENT = `query Agent($id: ID!) {
  agent(id: $id) {
    id name namespace sessionless createdAt
    latestVersion { id number label createdAt effectiveMemoryConfig }
  }
}`;

export const AGENT_USAGE = `query AgentUsage($id: ID!) {
  agent(id: $id) {
    id
    usage { calls inputTokens outputTokens latencyMs cost unpricedCalls byModel { model calls inputTokens outputTokens latencyMs cost } }
    activity(days: 30) { day turns calls inputTokens outputTokens }
  }
}`;

export const AGENT_MEMORY_DAYS = `query AgentMemoryDays($id: ID!) {
  agent(id: $id) { id memoryActivity(days: 30) { day records } }
}`;

export const RECENT_SESSIONS = `query RecentSessions($id: ID!) {
  agent(id: $id) {
    id
    sessions(first: 5) { totalCount edges { node { id externalId createdAt } } }
  }
}`;

export const RECENT_MEMORY = `query RecentMemory($id: ID!) {
  agent(id: $id) {
    id
    memoryRecords(first: 5) {
      totalCount
      edges { node { id status scope preview current { summary kind } replaces { id } } }
    }
  }
}`;

export const SESSIONS = `query Sessions($id: ID!, $after: String, $filter: SessionFilter) {
  agent(id: $id) {
    id
    sessions(first: 25, after: $after, filter: $filter) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges { node {
        id externalId createdAt
        usage { calls inputTokens outputTokens cost }
        turns(first: 1) { totalCount edges { node { id number status createdAt endedAt } } }
      } }
    }
  }
}`;

export const SESSION_BY_EXTERNAL_ID = `query SessionByExternalId($id: ID!, $x: String!) {
  agent(id: $id) { id session(externalId: $x) { id } }
}`;

export const HISTORY_SEARCH = `query HistorySearch($ns: String!, $q: String!, $agent: ID, $filter: SessionFilter) {
  searchSessionHistory(namespace: $ns, query: $q, agentId: $agent, filter: $filter, limit: 20) {
    sessionsSearched moreSessions
    hits {
      score header text part parts preview
      session { id externalId agent { id name } }
      turn { id number }
    }
  }
}`;

export const SESSION = `query Session($id: ID!, $after: String) {
  session(id: $id) {
    id externalId createdAt
    agent { id name namespace }
    usage { calls inputTokens outputTokens latencyMs cost unpricedCalls }
    turns(first: 25, after: $after) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges { node {
        id number attempt status preview error createdAt endedAt
        replayOf { id number } retryOf { id number }
        usage { inputTokens outputTokens cost }
      } }
    }
  }
}`;

// The session's turns as they begin and end (over the WebSocket: api.js subscribe).
export const SESSION_TURNS = `subscription SessionTurns($id: ID!) {
  sessionTurns(sessionId: $id) {
    id number attempt status preview error createdAt endedAt
    replayOf { id number } retryOf { id number }
    usage { inputTokens outputTokens cost }
  }
}`;

export const TURN = `query Turn($id: ID!) {
  turn(id: $id) {
    id number attempt status preview error createdAt endedAt
    replayOf { id number } retryOf { id number }
    session { id externalId }
    agent { id name namespace }
    agentVersion { id number label }
    usage { calls inputTokens outputTokens latencyMs cost unpricedCalls }
    executionsConnection(first: 50) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges { node {
        id kind name status error createdAt endedAt input output
        parent { id }
        invocations { id purpose model inputTokens outputTokens counted latencyMs cost createdAt }
      } }
    }
  }
}`;

export const WROTE = `query TurnWrote($id: ID!) {
  turn(id: $id) {
    id
    memories { id status scope preview current { number summary kind } replaces { id } }
  }
}`;

export const USES = `query TurnUses($id: ID!) {
  turn(id: $id) {
    id
    executionsConnection(first: 50) {
      edges { node {
        id name
        uses {
          rank
          memoryVersion { id number summary kind record { id status } }
          historyEvent { id turnNumber header text turn { id } }
        }
      } }
    }
  }
}`;

export const TRANSCRIPT = `query Transcript($id: ID!, $after: String) {
  turn(id: $id) {
    id
    transcriptConnection(first: 50, after: $after) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges { node { id sequence type toolName toolCallId payload createdAt execution { id name } } }
    }
  }
}`;

export const RECORDS = `query Records($id: ID!, $after: String, $filter: MemoryRecordFilter, $asOf: MemoryAsOf) {
  agent(id: $id) {
    id
    memoryRecords(first: 25, after: $after, filter: $filter, asOf: $asOf) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges { node {
        id scope status preview pinned createdAt replaces { id }
        current { number summary kind labelList { name value } }
        versionsConnection(first: 1) { totalCount }
      } }
    }
  }
}`;

export const AS_OF_TURN = `query AsOfTurn($id: ID!) {
  turn(id: $id) { id number createdAt preview session { id externalId } }
}`;

export const RECORD = `query Record($id: ID!, $after: String) {
  agentMemory(id: $id) {
    id scope status preview pinned createdAt
    session { id externalId }
    current { summary kind }
    replaces { id current { summary } }
    replacedBy { id current { summary } }
    versionsConnection(first: 20, after: $after) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges { node {
        id number status summary content kind createdAt
        labelList { name value }
        writtenBy {
          execution { id kind name }
          invocation { purpose model inputTokens outputTokens }
          turn { id number attempt status }
          session { id externalId }
          agentVersion { id number label }
          apiDeletion { caller createdAt principal { name kind } }
        }
      } }
    }
  }
}`;

export const SEARCH = `query Search($id: ID!, $q: String!) {
  searchAgentMemory(agentId: $id, query: $q, limit: 20) {
    score cosine lexical
    version { id number summary kind createdAt labelList { name value } }
    record { id scope status preview }
    explanation {
      mode preset recency ageDays halfLifeDays
      meaning { rank term }
      keywords { rank term }
    }
  }
}`;

export const CONFIG = `query Config($id: ID!) {
  agent(id: $id) {
    id name namespace sessionless
    versions { id number label createdAt config effectiveMemoryConfig }
  }
}`;

export const AGENT_CHOICES = `query AgentChoices($ns: String!) {
  agents(namespace: $ns, first: 100) { edges { node { id name } } }
}`;
