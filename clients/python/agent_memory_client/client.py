from typing import Any, Optional, Union

from .add_memory import AddMemory
from .agent_memory_records import AgentMemoryRecords
from .agent_session import AgentSession
from .agent_sessions import AgentSessions
from .agents import Agents
from .apply_memory_review import ApplyMemoryReview
from .base_client import BaseClient
from .base_model import UNSET, UnsetType
from .begin_memory_review import BeginMemoryReview
from .begin_turn import BeginTurn
from .commit_turn import CommitTurn
from .compare_memory_candidates import CompareMemoryCandidates
from .create_agent import CreateAgent
from .create_session import CreateSession
from .delete_memory import DeleteMemory
from .enums import ListOrder
from .input_types import (
    AddMemoryInput,
    ApplyMemoryReviewInput,
    BeginMemoryReviewInput,
    BeginTurnInput,
    CommitTurnInput,
    CompareMemoryCandidatesInput,
    CreateAgentInput,
    CreateSessionInput,
    DeleteMemoryInput,
    LabelInput,
    MemoryAsOf,
    MemoryRecordFilter,
    PublishAgentVersionInput,
    ReadMemoryInput,
    RecallInput,
    RecordEventsInput,
    RecordInvocationInput,
    RollbackTurnInput,
    SearchHistoryInput,
    SearchMemoryInput,
    SessionFilter,
)
from .memory_record_detail import MemoryRecordDetail
from .namespaces import Namespaces
from .publish_agent_version import PublishAgentVersion
from .read_memory import ReadMemory
from .recall import Recall
from .record_events import RecordEvents
from .record_invocation import RecordInvocation
from .rollback_turn import RollbackTurn
from .search_agent_memory import SearchAgentMemory
from .search_history import SearchHistory
from .search_memory import SearchMemory
from .search_session_history import SearchSessionHistory
from .session_turns import SessionTurns
from .turn_transcript import TurnTranscript


def gql(q: str) -> str:
    return q


class Client(BaseClient):
    def create_agent(self, input: CreateAgentInput, **kwargs: Any) -> CreateAgent:
        query = gql("""
            mutation CreateAgent($input: CreateAgentInput!) {
              createAgent(input: $input) {
                agent {
                  id
                  namespace
                  name
                  sessionless
                  createdAt
                }
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query, operation_name="CreateAgent", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return CreateAgent.model_validate(data)

    def publish_agent_version(
        self, input: PublishAgentVersionInput, **kwargs: Any
    ) -> PublishAgentVersion:
        query = gql("""
            mutation PublishAgentVersion($input: PublishAgentVersionInput!) {
              publishAgentVersion(input: $input) {
                agentVersion {
                  id
                  number
                  label
                  config
                  effectiveMemoryConfig
                }
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query,
            operation_name="PublishAgentVersion",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return PublishAgentVersion.model_validate(data)

    def namespaces(self, **kwargs: Any) -> Namespaces:
        query = gql("""
            query Namespaces {
              namespaces
            }
            """)
        variables: dict[str, object] = {}
        response = self.execute(
            query=query, operation_name="Namespaces", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return Namespaces.model_validate(data)

    def agents(
        self,
        namespace: str,
        first: int,
        after: Union[Optional[str], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> Agents:
        query = gql("""
            query Agents($namespace: String!, $first: Int!, $after: String) {
              agents(namespace: $namespace, first: $first, after: $after) {
                edges {
                  node {
                    id
                    namespace
                    name
                    sessionless
                    createdAt
                  }
                }
                pageInfo {
                  hasNextPage
                  endCursor
                }
              }
            }
            """)
        variables: dict[str, object] = {
            "namespace": namespace,
            "first": first,
            "after": after,
        }
        response = self.execute(
            query=query, operation_name="Agents", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return Agents.model_validate(data)

    def agent_memory_records(
        self,
        agent_id: str,
        first: int,
        after: Union[Optional[str], UnsetType] = UNSET,
        filter_: Union[Optional[MemoryRecordFilter], UnsetType] = UNSET,
        as_of: Union[Optional[MemoryAsOf], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> AgentMemoryRecords:
        query = gql("""
            query AgentMemoryRecords($agentId: ID!, $first: Int!, $after: String, $filter: MemoryRecordFilter, $asOf: MemoryAsOf) {
              agent(id: $agentId) {
                id
                namespace
                name
                memoryRecords(first: $first, after: $after, filter: $filter, asOf: $asOf) {
                  edges {
                    node {
                      id
                      scope
                      status
                      preview
                      pinned
                      createdAt
                      current {
                        ...MemoryVersionFields
                      }
                      versionsConnection(first: 3) {
                        totalCount
                        edges {
                          node {
                            number
                            status
                          }
                        }
                      }
                      replaces {
                        id
                      }
                      replacedBy {
                        id
                      }
                    }
                  }
                  pageInfo {
                    hasNextPage
                    hasPreviousPage
                    startCursor
                    endCursor
                  }
                  totalCount
                }
              }
            }

            fragment MemoryVersionFields on MemoryVersion {
              id
              recordId
              number
              status
              summary
              content
              kind
              labels
              labelList {
                name
                value
              }
              createdAt
            }
            """)
        variables: dict[str, object] = {
            "agentId": agent_id,
            "first": first,
            "after": after,
            "filter": filter_,
            "asOf": as_of,
        }
        response = self.execute(
            query=query,
            operation_name="AgentMemoryRecords",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return AgentMemoryRecords.model_validate(data)

    def memory_record_detail(
        self,
        id: str,
        first: Union[Optional[int], UnsetType] = UNSET,
        after: Union[Optional[str], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> MemoryRecordDetail:
        query = gql("""
            query MemoryRecordDetail($id: ID!, $first: Int = 50, $after: String) {
              agentMemory(id: $id) {
                id
                scope
                status
                preview
                pinned
                createdAt
                replaces {
                  id
                }
                replacedBy {
                  id
                }
                versionsConnection(first: $first, after: $after) {
                  totalCount
                  pageInfo {
                    hasNextPage
                    endCursor
                  }
                  edges {
                    node {
                      ...MemoryVersionFields
                      writtenBy {
                        execution {
                          id
                          kind
                          name
                          status
                        }
                        invocation {
                          purpose
                          model
                        }
                        turn {
                          id
                          number
                          attempt
                          status
                        }
                        session {
                          id
                          externalId
                        }
                        agentVersion {
                          number
                          label
                        }
                        apiDeletion {
                          caller
                          createdAt
                        }
                      }
                    }
                  }
                }
              }
            }

            fragment MemoryVersionFields on MemoryVersion {
              id
              recordId
              number
              status
              summary
              content
              kind
              labels
              labelList {
                name
                value
              }
              createdAt
            }
            """)
        variables: dict[str, object] = {"id": id, "first": first, "after": after}
        response = self.execute(
            query=query,
            operation_name="MemoryRecordDetail",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return MemoryRecordDetail.model_validate(data)

    def agent_sessions(
        self,
        agent_id: str,
        first: int,
        after: Union[Optional[str], UnsetType] = UNSET,
        filter_: Union[Optional[SessionFilter], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> AgentSessions:
        query = gql("""
            query AgentSessions($agentId: ID!, $first: Int!, $after: String, $filter: SessionFilter) {
              agent(id: $agentId) {
                id
                sessions(first: $first, after: $after, filter: $filter) {
                  edges {
                    node {
                      id
                      externalId
                      createdAt
                    }
                  }
                  pageInfo {
                    hasNextPage
                    hasPreviousPage
                    startCursor
                    endCursor
                  }
                  totalCount
                }
              }
            }
            """)
        variables: dict[str, object] = {
            "agentId": agent_id,
            "first": first,
            "after": after,
            "filter": filter_,
        }
        response = self.execute(
            query=query, operation_name="AgentSessions", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return AgentSessions.model_validate(data)

    def agent_session(
        self, agent_id: str, external_id: str, **kwargs: Any
    ) -> AgentSession:
        query = gql("""
            query AgentSession($agentId: ID!, $externalId: String!) {
              agent(id: $agentId) {
                id
                session(externalId: $externalId) {
                  id
                  externalId
                  createdAt
                }
              }
            }
            """)
        variables: dict[str, object] = {"agentId": agent_id, "externalId": external_id}
        response = self.execute(
            query=query, operation_name="AgentSession", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return AgentSession.model_validate(data)

    def search_session_history(
        self,
        namespace: str,
        query: str,
        agent_id: Union[Optional[str], UnsetType] = UNSET,
        limit: Union[Optional[int], UnsetType] = UNSET,
        filter_: Union[Optional[SessionFilter], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> SearchSessionHistory:
        _query = gql("""
            query SearchSessionHistory($namespace: String!, $query: String!, $agentId: ID, $limit: Int, $filter: SessionFilter) {
              searchSessionHistory(
                namespace: $namespace
                query: $query
                agentId: $agentId
                limit: $limit
                filter: $filter
              ) {
                sessionsSearched
                moreSessions
                hits {
                  score
                  header
                  text
                  part
                  parts
                  preview
                  session {
                    id
                    externalId
                  }
                  turn {
                    id
                    number
                  }
                }
              }
            }
            """)
        variables: dict[str, object] = {
            "namespace": namespace,
            "query": query,
            "agentId": agent_id,
            "limit": limit,
            "filter": filter_,
        }
        response = self.execute(
            query=_query,
            operation_name="SearchSessionHistory",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return SearchSessionHistory.model_validate(data)

    def session_turns(
        self,
        session_id: str,
        first: int,
        after: Union[Optional[str], UnsetType] = UNSET,
        order: Union[Optional[ListOrder], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> SessionTurns:
        query = gql("""
            query SessionTurns($sessionId: ID!, $first: Int!, $after: String, $order: ListOrder = NEWEST_FIRST) {
              session(id: $sessionId) {
                id
                externalId
                createdAt
                turns(first: $first, after: $after, order: $order) {
                  edges {
                    node {
                      ...TurnFields
                    }
                  }
                  pageInfo {
                    hasNextPage
                    hasPreviousPage
                    startCursor
                    endCursor
                  }
                  totalCount
                }
              }
            }

            fragment TurnFields on Turn {
              id
              number
              attempt
              status
              preview
              error
              createdAt
              endedAt
            }
            """)
        variables: dict[str, object] = {
            "sessionId": session_id,
            "first": first,
            "after": after,
            "order": order,
        }
        response = self.execute(
            query=query, operation_name="SessionTurns", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return SessionTurns.model_validate(data)

    def turn_transcript(
        self,
        turn_id: str,
        first: int,
        after: Union[Optional[str], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> TurnTranscript:
        query = gql("""
            query TurnTranscript($turnId: ID!, $first: Int!, $after: String) {
              turn(id: $turnId) {
                id
                transcriptConnection(first: $first, after: $after) {
                  edges {
                    node {
                      id
                      sequence
                      type
                      toolName
                      toolCallId
                      payload
                      createdAt
                    }
                  }
                  pageInfo {
                    hasNextPage
                    endCursor
                  }
                  totalCount
                }
              }
            }
            """)
        variables: dict[str, object] = {
            "turnId": turn_id,
            "first": first,
            "after": after,
        }
        response = self.execute(
            query=query, operation_name="TurnTranscript", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return TurnTranscript.model_validate(data)

    def search_agent_memory(
        self,
        agent_id: str,
        query: str,
        limit: Union[Optional[int], UnsetType] = UNSET,
        kind: Union[Optional[str], UnsetType] = UNSET,
        labels: Union[Optional[list[LabelInput]], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> SearchAgentMemory:
        _query = gql("""
            query SearchAgentMemory($agentId: ID!, $query: String!, $limit: Int, $kind: String, $labels: [LabelInput!]) {
              searchAgentMemory(
                agentId: $agentId
                query: $query
                limit: $limit
                kind: $kind
                labels: $labels
              ) {
                ...SearchResultFields
                explanation {
                  mode
                  preset
                  meaning {
                    rank
                    term
                  }
                  keywords {
                    rank
                    term
                  }
                  recency
                  ageDays
                  halfLifeDays
                }
              }
            }

            fragment MemoryVersionFields on MemoryVersion {
              id
              recordId
              number
              status
              summary
              content
              kind
              labels
              labelList {
                name
                value
              }
              createdAt
            }

            fragment SearchResultFields on MemorySearchResult {
              score
              cosine
              lexical
              version {
                ...MemoryVersionFields
              }
              record {
                id
                scope
                status
                pinned
                preview
              }
            }
            """)
        variables: dict[str, object] = {
            "agentId": agent_id,
            "query": query,
            "limit": limit,
            "kind": kind,
            "labels": labels,
        }
        response = self.execute(
            query=_query,
            operation_name="SearchAgentMemory",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return SearchAgentMemory.model_validate(data)

    def create_session(self, input: CreateSessionInput, **kwargs: Any) -> CreateSession:
        query = gql("""
            mutation CreateSession($input: CreateSessionInput!) {
              createSession(input: $input) {
                session {
                  id
                  externalId
                  createdAt
                }
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query, operation_name="CreateSession", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return CreateSession.model_validate(data)

    def begin_turn(self, input: BeginTurnInput, **kwargs: Any) -> BeginTurn:
        query = gql("""
            mutation BeginTurn($input: BeginTurnInput!) {
              beginTurn(input: $input) {
                turn {
                  ...TurnFields
                }
                execution {
                  id
                }
                pinned {
                  recordId
                  versionId
                  summary
                  line
                }
                instructions
              }
            }

            fragment TurnFields on Turn {
              id
              number
              attempt
              status
              preview
              error
              createdAt
              endedAt
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query, operation_name="BeginTurn", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return BeginTurn.model_validate(data)

    def record_events(self, input: RecordEventsInput, **kwargs: Any) -> RecordEvents:
        query = gql("""
            mutation RecordEvents($input: RecordEventsInput!) {
              recordEvents(input: $input) {
                events {
                  id
                  sequence
                  type
                  toolName
                  toolCallId
                }
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query, operation_name="RecordEvents", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return RecordEvents.model_validate(data)

    def add_memory(self, input: AddMemoryInput, **kwargs: Any) -> AddMemory:
        query = gql("""
            mutation AddMemory($input: AddMemoryInput!) {
              addMemory(input: $input) {
                execution {
                  id
                }
                memories {
                  ...MemoryVersionFields
                }
              }
            }

            fragment MemoryVersionFields on MemoryVersion {
              id
              recordId
              number
              status
              summary
              content
              kind
              labels
              labelList {
                name
                value
              }
              createdAt
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query, operation_name="AddMemory", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return AddMemory.model_validate(data)

    def search_memory(self, input: SearchMemoryInput, **kwargs: Any) -> SearchMemory:
        query = gql("""
            mutation SearchMemory($input: SearchMemoryInput!) {
              searchMemory(input: $input) {
                execution {
                  id
                }
                results {
                  ...SearchResultFields
                }
                nextCursor
              }
            }

            fragment MemoryVersionFields on MemoryVersion {
              id
              recordId
              number
              status
              summary
              content
              kind
              labels
              labelList {
                name
                value
              }
              createdAt
            }

            fragment SearchResultFields on MemorySearchResult {
              score
              cosine
              lexical
              version {
                ...MemoryVersionFields
              }
              record {
                id
                scope
                status
                pinned
                preview
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query, operation_name="SearchMemory", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return SearchMemory.model_validate(data)

    def recall(self, input: RecallInput, **kwargs: Any) -> Recall:
        query = gql("""
            mutation Recall($input: RecallInput!) {
              recall(input: $input) {
                kind
                notice
                text
                recorded
                results {
                  ...SearchResultFields
                }
                execution {
                  id
                }
                repeatOf {
                  id
                }
              }
            }

            fragment MemoryVersionFields on MemoryVersion {
              id
              recordId
              number
              status
              summary
              content
              kind
              labels
              labelList {
                name
                value
              }
              createdAt
            }

            fragment SearchResultFields on MemorySearchResult {
              score
              cosine
              lexical
              version {
                ...MemoryVersionFields
              }
              record {
                id
                scope
                status
                pinned
                preview
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query, operation_name="Recall", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return Recall.model_validate(data)

    def read_memory(self, input: ReadMemoryInput, **kwargs: Any) -> ReadMemory:
        query = gql("""
            mutation ReadMemory($input: ReadMemoryInput!) {
              readMemory(input: $input) {
                execution {
                  id
                }
                sources {
                  ...MemoryVersionFields
                }
              }
            }

            fragment MemoryVersionFields on MemoryVersion {
              id
              recordId
              number
              status
              summary
              content
              kind
              labels
              labelList {
                name
                value
              }
              createdAt
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query, operation_name="ReadMemory", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return ReadMemory.model_validate(data)

    def delete_memory(self, input: DeleteMemoryInput, **kwargs: Any) -> DeleteMemory:
        query = gql("""
            mutation DeleteMemory($input: DeleteMemoryInput!) {
              deleteMemory(input: $input) {
                execution {
                  id
                }
                memories {
                  ...MemoryVersionFields
                }
              }
            }

            fragment MemoryVersionFields on MemoryVersion {
              id
              recordId
              number
              status
              summary
              content
              kind
              labels
              labelList {
                name
                value
              }
              createdAt
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query, operation_name="DeleteMemory", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return DeleteMemory.model_validate(data)

    def search_history(self, input: SearchHistoryInput, **kwargs: Any) -> SearchHistory:
        query = gql("""
            mutation SearchHistory($input: SearchHistoryInput!) {
              searchHistory(input: $input) {
                execution {
                  id
                }
                results {
                  eventId
                  turn
                  role
                  toolName
                  isError
                  header
                  text
                  part
                  parts
                  sequence
                  score
                }
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query, operation_name="SearchHistory", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return SearchHistory.model_validate(data)

    def begin_memory_review(
        self, input: BeginMemoryReviewInput, **kwargs: Any
    ) -> BeginMemoryReview:
        query = gql("""
            mutation BeginMemoryReview($input: BeginMemoryReviewInput!) {
              beginMemoryReview(input: $input) {
                due
                reason
                messages
                review {
                  id
                  status
                  afterTurn
                  throughTurn
                  execution {
                    id
                  }
                }
                instructions
                conversation {
                  turn
                  role
                  toolName
                  header
                  text
                }
                text
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query,
            operation_name="BeginMemoryReview",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return BeginMemoryReview.model_validate(data)

    def compare_memory_candidates(
        self, input: CompareMemoryCandidatesInput, **kwargs: Any
    ) -> CompareMemoryCandidates:
        query = gql("""
            mutation CompareMemoryCandidates($input: CompareMemoryCandidatesInput!) {
              compareMemoryCandidates(input: $input) {
                candidates {
                  candidate
                  summary
                  similar {
                    similarity
                    version {
                      ...MemoryVersionFields
                    }
                  }
                  restates {
                    similarity
                    version {
                      ...MemoryVersionFields
                    }
                  }
                }
                text
              }
            }

            fragment MemoryVersionFields on MemoryVersion {
              id
              recordId
              number
              status
              summary
              content
              kind
              labels
              labelList {
                name
                value
              }
              createdAt
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query,
            operation_name="CompareMemoryCandidates",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return CompareMemoryCandidates.model_validate(data)

    def apply_memory_review(
        self, input: ApplyMemoryReviewInput, **kwargs: Any
    ) -> ApplyMemoryReview:
        query = gql("""
            mutation ApplyMemoryReview($input: ApplyMemoryReviewInput!) {
              applyMemoryReview(input: $input) {
                review {
                  id
                  status
                  appliedAt
                }
                memories {
                  ...MemoryVersionFields
                }
                decisions {
                  candidate
                  summary
                  action
                  applied
                  recordId
                  restates
                  similarity
                }
              }
            }

            fragment MemoryVersionFields on MemoryVersion {
              id
              recordId
              number
              status
              summary
              content
              kind
              labels
              labelList {
                name
                value
              }
              createdAt
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query,
            operation_name="ApplyMemoryReview",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return ApplyMemoryReview.model_validate(data)

    def record_invocation(
        self, input: RecordInvocationInput, **kwargs: Any
    ) -> RecordInvocation:
        query = gql("""
            mutation RecordInvocation($input: RecordInvocationInput!) {
              recordInvocation(input: $input) {
                invocation {
                  id
                  purpose
                  model
                  inputTokens
                  outputTokens
                  counted
                }
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query,
            operation_name="RecordInvocation",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return RecordInvocation.model_validate(data)

    def commit_turn(self, input: CommitTurnInput, **kwargs: Any) -> CommitTurn:
        query = gql("""
            mutation CommitTurn($input: CommitTurnInput!) {
              commitTurn(input: $input) {
                turn {
                  ...TurnFields
                }
              }
            }

            fragment TurnFields on Turn {
              id
              number
              attempt
              status
              preview
              error
              createdAt
              endedAt
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query, operation_name="CommitTurn", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return CommitTurn.model_validate(data)

    def rollback_turn(self, input: RollbackTurnInput, **kwargs: Any) -> RollbackTurn:
        query = gql("""
            mutation RollbackTurn($input: RollbackTurnInput!) {
              rollbackTurn(input: $input) {
                turn {
                  ...TurnFields
                  memories {
                    id
                  }
                }
              }
            }

            fragment TurnFields on Turn {
              id
              number
              attempt
              status
              preview
              error
              createdAt
              endedAt
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query, operation_name="RollbackTurn", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return RollbackTurn.model_validate(data)
